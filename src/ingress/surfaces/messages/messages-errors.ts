import type { GatewayError } from '../../../shared/errors.js';
import type { RenderedError } from '../../pipeline/surface.js';

// Errors as Anthropic answers them: {"type":"error","error":{"type":...,"message":...}}, with its
// statuses. The SDKs pick their exception class by status (401 AuthenticationError, 429
// RateLimitError, 529 overloaded...).

const typesByStatus: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  413: 'request_too_large',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
  504: 'timeout_error',
};

/** Anthropic reports its own overload as 529, which its clients retry. */
const overloadCodes = new Set(['overloaded', 'upstream_unavailable']);

export function anthropicErrorType(error: { status?: number; code: string }): { status: number; type: string } {
  if (overloadCodes.has(error.code)) return { status: 529, type: 'overloaded_error' };
  const status = error.status ?? 500;
  return { status, type: typesByStatus[status] ?? 'api_error' };
}

export function renderMessagesError(error: GatewayError): RenderedError {
  const { status, type } = anthropicErrorType(error);
  const headers: Array<[string, string]> = [];
  if (error.retryAfterSeconds !== undefined) headers.push(['retry-after', String(Math.max(1, Math.ceil(error.retryAfterSeconds)))]);
  if (error.headers) headers.push(...error.headers);
  return { status, body: JSON.stringify({ type: 'error', error: { type, message: error.message } }), headers };
}
