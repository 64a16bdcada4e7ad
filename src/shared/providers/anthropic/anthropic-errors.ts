import type { FailureKind, UpstreamFailure } from '../chat-adapter.js';
import { failureFromStatus, parseJsonOrUndefined, shortText } from '../upstream-errors.js';

// Anthropic error bodies: {"type":"error","error":{"type","message"},"request_id"}. The same
// object arrives as an `event: error` after a stream has started with HTTP 200.

const kindsByErrorType: Record<string, FailureKind> = {
  invalid_request_error: 'bad_request',
  request_too_large: 'bad_request',
  authentication_error: 'auth',
  permission_error: 'auth',
  // A billing problem is an account problem: retrying the same key elsewhere in the chain is as futile as with a bad key.
  billing_error: 'auth',
  not_found_error: 'not_found',
  rate_limit_error: 'rate_limit',
  api_error: 'server_error',
  timeout_error: 'timeout',
  overloaded_error: 'overloaded',
};

export function anthropicFailureKind(errorType: string | undefined): FailureKind | undefined {
  return errorType === undefined ? undefined : kindsByErrorType[errorType];
}

interface AnthropicErrorBody {
  error?: { type?: string; message?: string };
}

export function readAnthropicError(value: unknown): { type?: string; message?: string } | undefined {
  const error = (value as AnthropicErrorBody | undefined)?.error;
  return error && typeof error === 'object' ? error : undefined;
}

/** Failure for an `event: error` received mid-stream, where no HTTP status exists. */
export function anthropicStreamFailure(value: unknown): UpstreamFailure {
  const error = readAnthropicError(value);
  return {
    kind: anthropicFailureKind(error?.type) ?? 'server_error',
    message: typeof error?.message === 'string' ? error.message : 'Anthropic reported an error mid-stream.',
  };
}

export function parseAnthropicError(status: number, headers: Record<string, string>, body: string): UpstreamFailure {
  const error = readAnthropicError(parseJsonOrUndefined(body));
  const message = typeof error?.message === 'string' ? error.message : shortText(body) || `HTTP ${status}`;
  const failure = failureFromStatus(status, headers, message);
  // The error type is more precise than the status (a 504 timeout_error, a 402 billing_error), so it wins when known.
  const kind = anthropicFailureKind(error?.type);
  if (kind) failure.kind = kind;
  return failure;
}
