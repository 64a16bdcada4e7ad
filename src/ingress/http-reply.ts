import type { HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../shared/errors.js';

// Writing whole responses: every write goes through cork so that status, headers and body leave
// in one syscall even when called from a timer or an event callback.

const statusTexts: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 204: '204 No Content', 400: '400 Bad Request', 401: '401 Unauthorized',
  402: '402 Payment Required', 403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed',
  413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 429: '429 Too Many Requests',
  500: '500 Internal Server Error', 502: '502 Bad Gateway', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

export function statusLine(status: number): string {
  return statusTexts[status] ?? `${status} Status`;
}

/** Per-response state the routes share; `aborted` is set by onAborted and checked before each write. */
export interface ReplyState {
  aborted: boolean;
  done: boolean;
  requestId: string;
  extraHeaders?: Array<[string, string]>;
  /** A HEAD request: the reply carries the headers (and length) of the body, not the body. */
  head?: boolean;
}

export function replyJson(res: HttpResponse, state: ReplyState, status: number, body: string, headers: Array<[string, string]> = [], closeConnection = false): void {
  if (state.aborted || state.done) return;
  state.done = true;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    res.writeHeader('content-type', 'application/json');
    res.writeHeader('x-request-id', state.requestId);
    if (state.extraHeaders) for (const [name, value] of state.extraHeaders) res.writeHeader(name, value);
    for (const [name, value] of headers) res.writeHeader(name, value);
    if (state.head) res.endWithoutBody(Buffer.byteLength(body), closeConnection);
    else res.end(body, closeConnection);
  });
}

export function replyError(res: HttpResponse, state: ReplyState, error: unknown, closeConnection = false): void {
  const gatewayError = error instanceof GatewayError ? error : new GatewayError('internal_error', 'The gateway failed while handling this request.');
  const headers: Array<[string, string]> = [];
  if (gatewayError.retryAfterSeconds !== undefined) headers.push(['retry-after', String(Math.max(1, Math.ceil(gatewayError.retryAfterSeconds)))]);
  if (gatewayError.headers) headers.push(...gatewayError.headers);
  replyJson(res, state, gatewayError.status, JSON.stringify(gatewayError.toBody()), headers, closeConnection);
}
