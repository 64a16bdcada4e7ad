// The single registry of every error the gateway can answer with. Each entry fixes the HTTP
// status, the OpenAI-style `type` and the `code`, so no handler invents its own.
export const errorCatalog = {
  invalid_api_key: { status: 401, type: 'invalid_request_error' },
  invalid_admin_token: { status: 401, type: 'invalid_request_error' },
  invalid_value: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  /** Ambiguous HTTP framing (duplicate Content-Length): refused and the connection closed. */
  invalid_request_framing: { status: 400, type: 'invalid_request_error' },
  missing_required_parameter: { status: 400, type: 'invalid_request_error' },
  unknown_parameter: { status: 400, type: 'invalid_request_error' },
  too_many_fallbacks: { status: 400, type: 'invalid_request_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  /** The key's allowed_models does not include the model (or a fallback named in the request). */
  model_not_allowed: { status: 403, type: 'invalid_request_error' },
  /** The admin API caller's role (or, for a member, their projects) does not cover the action. */
  insufficient_role: { status: 403, type: 'invalid_request_error' },
  /** Creating something that must be unique and exists (a user's email). */
  already_exists: { status: 409, type: 'invalid_request_error' },
  provider_not_configured: { status: 503, type: 'server_error' },
  budget_exceeded: { status: 402, type: 'insufficient_quota' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  too_many_attempts: { status: 429, type: 'rate_limit_error' },
  upstream_rate_limited: { status: 429, type: 'rate_limit_error' },
  upstream_error: { status: 502, type: 'server_error' },
  upstream_timeout: { status: 504, type: 'server_error' },
  upstream_bad_request: { status: 400, type: 'invalid_request_error' },
  upstream_unavailable: { status: 503, type: 'server_error' },
  overloaded: { status: 503, type: 'server_error' },
  service_unavailable: { status: 503, type: 'server_error' },
  worker_lost: { status: 502, type: 'server_error' },
  internal_error: { status: 500, type: 'server_error' },
} as const;

export type ErrorCode = keyof typeof errorCatalog;

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  /** Seconds a client should wait before trying again (sent as `retry-after`). */
  readonly retryAfterSeconds?: number;
  /** Extra response headers, such as the rate-limit state of a refused request. */
  readonly headers?: Array<[string, string]>;

  constructor(code: ErrorCode, message: string, options: { param?: string | null; status?: number; retryAfterSeconds?: number; headers?: Array<[string, string]> } = {}) {
    super(message);
    this.code = code;
    this.status = options.status ?? errorCatalog[code].status;
    this.type = errorCatalog[code].type;
    this.param = options.param ?? null;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = options.headers;
  }

  toBody(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** A plain, serialisable description of a failure; what crosses the transport. */
export interface ErrorDescription {
  code: ErrorCode;
  message: string;
  status?: number;
  param?: string | null;
  retryAfterSeconds?: number;
}

export function describeError(error: GatewayError): ErrorDescription {
  return { code: error.code, message: error.message, status: error.status, param: error.param, retryAfterSeconds: error.retryAfterSeconds };
}

export function errorFromDescription(description: ErrorDescription): GatewayError {
  return new GatewayError(description.code, description.message, description);
}

export function invalidApiKey(): GatewayError {
  return new GatewayError('invalid_api_key', 'Incorrect API key provided. Keys start with sk-service- and are managed in the dashboard.');
}
