import type { HttpResponse } from 'uWebSockets.js';
import { replyJson, type ReplyState } from '../http-reply.js';
import type { RenderedError } from './surface.js';

/** Writes a rendered answer (an error body of the surface's shape, or a whole response). */
export function replyRendered(res: HttpResponse, state: ReplyState, rendered: RenderedError, closeConnection = false): void {
  replyJson(res, state, rendered.status, rendered.body, rendered.headers, closeConnection);
}
