import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../../shared/errors.js';
import { replyError, replyJson, statusLine, type ReplyState } from '../http-reply.js';
import type { Asset } from './static-assets.js';

// HTTP details every dashboard response shares: security headers, request snapshots (uWS requests
// live only during the handler call) and the dashboard's own error replies.

export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function securityHeaders(cacheControl: string): Array<[string, string]> {
  return [
    ['content-security-policy', contentSecurityPolicy],
    ['x-content-type-options', 'nosniff'],
    ['referrer-policy', 'no-referrer'],
    ['x-frame-options', 'DENY'],
    ['cross-origin-opener-policy', 'same-origin'],
    ['cross-origin-resource-policy', 'same-origin'],
    ['cache-control', cacheControl],
  ];
}

/** What a dashboard handler may read from the request after it has returned to uWS. */
export interface RequestSnapshot {
  method: string;
  url: string;
  query: string;
  parameter: string;
  cookie: string;
  origin: string;
  csrfToken: string;
  contentType: string;
  acceptsGzip: boolean;
  ifNoneMatch: string;
  /** True when a proxy in front terminated HTTPS (x-forwarded-proto). */
  secure: boolean;
  /** scheme://host as the browser addressed this server. */
  ownOrigin: string;
  client: string;
}

export function snapshot(res: HttpResponse, req: HttpRequest, hasParameter: boolean): RequestSnapshot {
  const forwardedProto = req.getHeader('x-forwarded-proto').split(',')[0]!.trim().toLowerCase();
  const secure = forwardedProto === 'https';
  const host = req.getHeader('x-forwarded-host').split(',')[0]!.trim() || req.getHeader('host');
  return {
    method: req.getCaseSensitiveMethod().toUpperCase(),
    url: req.getUrl(),
    query: req.getQuery() ?? '',
    parameter: hasParameter ? decodeURIComponent(req.getParameter(0) ?? '') : '',
    cookie: req.getHeader('cookie'),
    origin: req.getHeader('origin'),
    csrfToken: req.getHeader('x-csrf-token'),
    contentType: req.getHeader('content-type'),
    acceptsGzip: /\bgzip\b/.test(req.getHeader('accept-encoding')),
    ifNoneMatch: req.getHeader('if-none-match'),
    secure,
    ownOrigin: `${secure ? 'https' : 'http'}://${host}`,
    client: Buffer.from(res.getRemoteAddressAsText()).toString(),
  };
}

/** Refusals specific to the dashboard (sessions, forgery, sign-in); their bodies use the API's error shape. */
export class DashboardError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly headers: Array<[string, string]> = []) {
    super(message);
  }
}

export function replyFailure(res: HttpResponse, state: ReplyState, error: unknown): void {
  if (!(error instanceof DashboardError)) return replyError(res, state, error);
  const type = error.status === 429 ? 'rate_limit_error' : 'invalid_request_error';
  replyJson(res, state, error.status, JSON.stringify({ error: { message: error.message, type, param: null, code: error.code } }), error.headers);
}

/** A file from memory, gzipped when the client accepts it, 304 when the client already has it. */
export function replyAsset(res: HttpResponse, state: ReplyState, request: RequestSnapshot, asset: Asset, cacheControl: string): void {
  if (state.aborted || state.done) return;
  state.done = true;
  const notModified = request.ifNoneMatch === asset.etag;
  res.cork(() => {
    res.writeStatus(notModified ? '304 Not Modified' : statusLine(200));
    for (const [name, value] of securityHeaders(cacheControl)) res.writeHeader(name, value);
    res.writeHeader('etag', asset.etag);
    res.writeHeader('vary', 'accept-encoding');
    if (notModified) return void res.endWithoutBody();
    res.writeHeader('content-type', asset.contentType);
    if (request.acceptsGzip) res.writeHeader('content-encoding', 'gzip');
    res.end(request.acceptsGzip ? asset.gzipped : asset.body);
  });
}

export function replyRedirect(res: HttpResponse, location: string): void {
  res.cork(() => {
    res.writeStatus('302 Found');
    for (const [name, value] of securityHeaders('no-store')) res.writeHeader(name, value);
    res.writeHeader('location', location);
    res.end();
  });
}

export function notFound(): GatewayError {
  return new GatewayError('not_found', 'Unknown dashboard path. Open /dashboard/ in a browser.');
}
