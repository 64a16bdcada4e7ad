import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Span } from '@opentelemetry/api';
import { GatewayError } from '../../shared/errors.js';
import { PendingBody, type BodyLimits } from '../body-reader.js';
import { replyError, type ReplyState } from '../http-reply.js';
import { describe } from './process-safety.js';
import { framingError } from './request-framing.js';

// Every uWS route handler goes through `route()`. uWS terminates the process when a handler returns
// without responding or registering onAborted, and an exception thrown before either happens does
// exactly that; so onAborted comes first, everything the handler needs is copied from HttpRequest
// (valid only during this call) up front, and every exception, sync or async, becomes an error
// response rendered by the route's own renderer. Nothing is written after an abort.

/** Writes an error reply; a surface with its own error shape passes its own. */
export type ErrorRenderer = (res: HttpResponse, state: ReplyState, error: unknown, closeConnection: boolean) => void;

export interface RequestContext {
  readonly res: HttpResponse;
  readonly state: ReplyState;
  /** Lower case. */
  readonly method: string;
  readonly url: string;
  readonly query: string;
  /** Values of the headers named in the route's options ('' when absent). */
  readonly headers: Readonly<Record<string, string>>;
  /** Route parameters, percent-decoded. */
  readonly parameters: readonly string[];
  readonly remoteAddress: string;
  /** The request body, already being collected; only on routes with `body: true`. */
  readonly body: PendingBody | undefined;
  /** Called once if the client goes away before the reply is complete. */
  onAbort?: () => void;
  /** For metrics and traces: the catalog id of the requested model once resolved. */
  model?: string;
  /** For metrics: performance.now() when the request arrived. */
  startedAt?: number;
  /** The request's span when tracing is on. */
  span?: Span;
}

export interface RouteOptions {
  /** Header names (lower case) the handler reads. */
  headers?: readonly string[];
  /** How many route parameters to decode. */
  parameters?: number;
  body?: boolean;
  /** Needs the client address (costs an allocation, so only on request). */
  remoteAddress?: boolean;
  renderError?: ErrorRenderer;
  /** Errors the renderer knows and that need no log line (GatewayError always counts). */
  isExpected?: (error: unknown) => boolean;
  /** Headers every reply of this route carries (set on the reply state). */
  extraHeaders?: Array<[string, string]>;
}

export type RouteHandler = (context: RequestContext) => void | Promise<void>;
export type UwsHandler = (res: HttpResponse, req: HttpRequest) => void;

export interface RequestWrapperOptions {
  logger: Logger;
  lifecycle: { draining: boolean };
  limits: BodyLimits;
}

/** Wraps route handlers; `route(name, options, handler)`, where `name` labels log lines. */
export type RouteWrapper = (name: string, options: RouteOptions, handler: RouteHandler) => UwsHandler;

const noHeaders: Readonly<Record<string, string>> = Object.freeze({});
const noParameters: readonly string[] = Object.freeze([]);

const defaultRenderer: ErrorRenderer = (res, state, error, closeConnection) => replyError(res, state, error, closeConnection);

export function createRequestWrapper(options: RequestWrapperOptions): RouteWrapper {
  const { logger, lifecycle, limits } = options;

  return (name, routeOptions, handler) => {
    const headerNames = routeOptions.headers ?? [];
    const parameterCount = routeOptions.parameters ?? 0;
    const render = routeOptions.renderError ?? defaultRenderer;
    const isExpected = routeOptions.isExpected;

    return (res, req) => {
      const state: ReplyState = { aborted: false, done: false, requestId: randomUUID(), extraHeaders: routeOptions.extraHeaders };
      let context: RequestContext | undefined;
      res.onAborted(() => {
        state.aborted = true;
        if (!context) return;
        context.body?.abort();
        context.onAbort?.();
      });
      const method = req.getMethod();
      state.head = method === 'head';

      const fail = (error: unknown): void => {
        if (!(error instanceof GatewayError) && !isExpected?.(error)) {
          logger.error({ err: describe(error), route: name, requestId: state.requestId }, 'request handler failed');
        }
        if (state.aborted || state.done) return;
        // A body still arriving would otherwise be read and thrown away; a refused upload ends here.
        const body = context?.body;
        const close = body !== undefined && !body.complete;
        body?.drop();
        if (close) state.linger = true;
        try {
          render(res, state, error, close);
        } catch (renderFailure) {
          logger.error({ err: describe(renderFailure), route: name, requestId: state.requestId }, 'error reply failed');
        }
      };

      try {
        const framing = framingError(res, req);
        if (framing) return void render(res, state, framing, true);
        if (lifecycle.draining) return void render(res, state, shuttingDown(), true);
        context = {
          res,
          state,
          method,
          url: req.getUrl(),
          query: req.getQuery() ?? '',
          headers: headerNames.length === 0 ? noHeaders : copyHeaders(req, headerNames),
          parameters: parameterCount === 0 ? noParameters : decodeParameters(req, parameterCount),
          remoteAddress: routeOptions.remoteAddress ? Buffer.from(res.getRemoteAddressAsText()).toString() : '',
          body: routeOptions.body ? new PendingBody(res, limits, req.getHeader('content-length')) : undefined,
        };
        const pending = handler(context);
        if (pending) pending.catch(fail);
      } catch (error) {
        fail(error);
      }
    };
  };
}

/** What a request that arrives on a kept-alive connection during a drain gets. */
export function shuttingDown(): GatewayError {
  return new GatewayError('service_unavailable', 'This gateway instance is shutting down; retry on another.', { retryAfterSeconds: 1 });
}

function copyHeaders(req: HttpRequest, names: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of names) headers[name] = req.getHeader(name);
  return headers;
}

function decodeParameters(req: HttpRequest, count: number): string[] {
  const parameters: string[] = [];
  for (let index = 0; index < count; index++) {
    const raw = req.getParameter(index) ?? '';
    try {
      parameters.push(decodeURIComponent(raw));
    } catch {
      throw new GatewayError('invalid_value', 'The path contains a malformed percent-encoding.', { param: 'path' });
    }
  }
  return parameters;
}
