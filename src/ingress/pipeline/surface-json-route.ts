import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Logger } from 'pino';
import { GatewayError } from '../../shared/errors.js';
import { authenticate } from '../authenticate.js';
import { parseJsonBody, readBody } from '../body-reader.js';
import type { ReplyState } from '../http-reply.js';
import type { KeyDirectory } from '../key-directory.js';
import { replyRendered } from './surface-reply.js';
import type { Surface, SurfaceHeaders } from './surface.js';

export interface JsonRouteDependencies {
  keys: KeyDirectory;
  logger: Logger;
  maxBodyBytes: number;
  lifecycle: { draining: boolean };
}

/**
 * An authenticated POST that answers at once from its body, with no job (count_tokens): the
 * surface's error shape, the same key rules as the pipeline.
 */
export function createSurfaceJsonRoute(surface: Surface, dependencies: JsonRouteDependencies, answer: (body: unknown, headers: SurfaceHeaders) => string) {
  return (res: HttpResponse, req: HttpRequest): void => {
    const authorization = req.getHeader('authorization');
    const apiKey = req.getHeader('x-api-key');
    const credential = authorization || (apiKey ? `Bearer ${apiKey}` : '');
    const headers: SurfaceHeaders = { anthropicVersion: req.getHeader('anthropic-version'), anthropicBeta: req.getHeader('anthropic-beta') };
    const state: ReplyState = { aborted: false, done: false, requestId: randomUUID() };
    res.onAborted(() => {
      state.aborted = true;
    });
    const fail = (error: unknown, close = false) => {
      const gatewayError = error instanceof GatewayError ? error : new GatewayError('internal_error', 'The gateway failed while handling this request.');
      if (!(error instanceof GatewayError)) dependencies.logger.error({ err: error, requestId: state.requestId, surface: surface.name }, 'request failed');
      replyRendered(res, state, surface.renderError(gatewayError), close);
    };
    if (dependencies.lifecycle.draining) return fail(new GatewayError('service_unavailable', 'This gateway instance is shutting down; retry on another.', { retryAfterSeconds: 1 }), true);
    let bodyRead = false;
    (async () => {
      const body = await readBody(res, dependencies.maxBodyBytes, state);
      if (!body) return;
      bodyRead = true;
      await authenticate(dependencies.keys, credential);
      replyRendered(res, state, { status: 200, body: answer(parseJsonBody(body), headers), headers: [] });
    })().catch((error) => fail(error, !bodyRead));
  };
}
