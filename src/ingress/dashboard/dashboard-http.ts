import type { HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../../shared/errors.js';
import { replyError, replyJson, statusLine, type ReplyState } from '../http-reply.js';
import type { RequestContext, RouteOptions } from '../pipeline/request-wrapper.js';
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

/** The headers `snapshot` reads; dashboard routes register them with the request wrapper. */
export const snapshotHeaders = ['x-forwarded-proto', 'x-forwarded-host', 'host', 'cookie', 'origin', 'x-csrf-token', 'content-type', 'accept-encoding', 'if-none-match'] as const;

export function snapshot(context: RequestContext): RequestSnapshot {
  const header = (name: (typeof snapshotHeaders)[number]) => context.headers[name] ?? '';
  const forwardedProto = header('x-forwarded-proto').split(',')[0]!.trim().toLowerCase();
  const secure = forwardedProto === 'https';
  const host = header('x-forwarded-host').split(',')[0]!.trim() || header('host');
  return {
    method: context.method.toUpperCase(),
    url: context.url,
    query: context.query,
    parameter: context.parameters[0] ?? '',
    cookie: header('cookie'),
    origin: header('origin'),
    csrfToken: header('x-csrf-token'),
    contentType: header('content-type'),
    acceptsGzip: /\bgzip\b/.test(header('accept-encoding')),
    ifNoneMatch: header('if-none-match'),
    secure,
    ownOrigin: `${secure ? 'https' : 'http'}://${host}`,
    client: context.remoteAddress,
  };
}

/** Refusals specific to the dashboard (sessions, forgery, sign-in); their bodies use the API's error shape. */
export class DashboardError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly headers: Array<[string, string]> = []) {
    super(message);
  }
}

export function replyFailure(res: HttpResponse, state: ReplyState, error: unknown, closeConnection = false): void {
  if (!(error instanceof DashboardError)) return replyError(res, state, error, closeConnection);
  const type = error.status === 429 ? 'rate_limit_error' : 'invalid_request_error';
  replyJson(res, state, error.status, JSON.stringify({ error: { message: error.message, type, param: null, code: error.code } }), error.headers, closeConnection);
}

/** Wrapper options every dashboard route shares: its headers, error shape and security headers. */
export function dashboardRouteOptions(parameters: number, body: boolean): RouteOptions {
  return {
    headers: snapshotHeaders,
    parameters,
    body,
    remoteAddress: true,
    renderError: replyFailure,
    isExpected: (error) => error instanceof DashboardError,
    extraHeaders: securityHeaders('no-store'),
  };
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
