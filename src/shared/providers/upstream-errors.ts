import type { FailureKind, UpstreamFailure } from './chat-adapter.js';

// Status-to-class rules every wire format shares; an adapter adds its own body parsing on top.

export function failureKindForStatus(status: number): FailureKind {
  if (status === 429) return 'rate_limit';
  if (status === 408) return 'timeout';
  if (status === 503 || status === 529) return 'overloaded';
  if (status >= 500) return 'server_error';
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not_found';
  return 'bad_request';
}

/** Reads `retry-after-ms`, then `retry-after` as seconds or as an HTTP date. */
export function retryAfterSeconds(headers: Record<string, string>, now = Date.now()): number | undefined {
  const milliseconds = Number(headers['retry-after-ms']);
  if (headers['retry-after-ms'] !== undefined && Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds / 1000;
  const value = headers['retry-after'];
  if (value === undefined || value === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function failureFromStatus(status: number, headers: Record<string, string>, message: string): UpstreamFailure {
  const failure: UpstreamFailure = { kind: failureKindForStatus(status), status, message };
  const retryAfter = retryAfterSeconds(headers);
  if (retryAfter !== undefined) failure.retryAfterSeconds = retryAfter;
  return failure;
}

/** Keeps upstream error text short: it ends up in client-facing messages and logs. */
export function shortText(text: string, limit = 300): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}
