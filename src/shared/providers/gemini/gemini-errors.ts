import type { FailureKind, UpstreamFailure } from '../chat-adapter.js';
import { failureFromStatus, parseJsonOrUndefined, shortText } from '../upstream-errors.js';

// Gemini errors follow google.rpc.Status: {"error":{"code","message","status","details":[...]}}.

const kindsByStatus: Record<string, FailureKind> = {
  RESOURCE_EXHAUSTED: 'rate_limit',
  UNAVAILABLE: 'overloaded',
  INTERNAL: 'server_error',
  UNKNOWN: 'server_error',
  DEADLINE_EXCEEDED: 'timeout',
  INVALID_ARGUMENT: 'bad_request',
  FAILED_PRECONDITION: 'bad_request',
  OUT_OF_RANGE: 'bad_request',
  PERMISSION_DENIED: 'auth',
  UNAUTHENTICATED: 'auth',
  NOT_FOUND: 'not_found',
  CANCELLED: 'cancelled',
};

interface RpcStatus {
  code?: number;
  message?: string;
  status?: string;
  details?: Array<Record<string, unknown>>;
}

/** Accepts the JSON error body, or the array form the non-SSE stream endpoint answers with. */
export function readGeminiError(value: unknown): RpcStatus | undefined {
  const root = Array.isArray(value) ? value[0] : value;
  const error = (root as { error?: unknown } | undefined)?.error;
  return error && typeof error === 'object' ? (error as RpcStatus) : undefined;
}

function detail(error: RpcStatus, typeSuffix: string): Record<string, unknown> | undefined {
  return error.details?.find((entry) => typeof entry['@type'] === 'string' && (entry['@type'] as string).endsWith(typeSuffix));
}

/** google.rpc.RetryInfo carries a protobuf Duration in its JSON form, e.g. "34.4s". */
function retryDelaySeconds(error: RpcStatus): number | undefined {
  const delay = detail(error, 'google.rpc.RetryInfo')?.retryDelay;
  const match = typeof delay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(delay) : null;
  return match ? Number(match[1]) : undefined;
}

function kindFor(error: RpcStatus): FailureKind | undefined {
  // A wrong API key is answered with 400 INVALID_ARGUMENT; only ErrorInfo's reason tells it apart.
  const reason = detail(error, 'google.rpc.ErrorInfo')?.reason;
  if (reason === 'API_KEY_INVALID' || reason === 'API_KEY_EXPIRED') return 'auth';
  return error.status ? kindsByStatus[error.status] : undefined;
}

/** Classifies an error object; used for HTTP errors and for an error event after the stream began. */
export function geminiFailure(error: RpcStatus | undefined, base: UpstreamFailure): UpstreamFailure {
  if (!error) return base;
  const failure: UpstreamFailure = { ...base };
  if (typeof error.message === 'string' && error.message !== '') failure.message = error.message;
  const kind = kindFor(error);
  if (kind) failure.kind = kind;
  const retryAfter = retryDelaySeconds(error);
  if (retryAfter !== undefined) failure.retryAfterSeconds = retryAfter;
  return failure;
}

export function parseGeminiError(status: number, headers: Record<string, string>, body: string): UpstreamFailure {
  const error = readGeminiError(parseJsonOrUndefined(body));
  return geminiFailure(error, failureFromStatus(status, headers, shortText(body) || `HTTP ${status}`));
}
