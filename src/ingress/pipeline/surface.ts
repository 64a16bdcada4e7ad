import type { GatewayError, ErrorDescription } from '../../shared/errors.js';
import type { ChoiceDelta, JobEventBody } from '../../shared/job.js';
import type { InternalRequest } from '../../shared/internal/request.js';
import type { Usage } from '../../shared/usage.js';

// A client API served on the one request pipeline. A surface only parses its wire request into the
// internal request, renders job events into its wire response and stream, and shapes its errors;
// authentication, model resolution, admission, queueing and cancellation are the pipeline's.

/** The request headers a surface named in `headerNames` (lower case; '' when absent). */
export type SurfaceHeaders = Readonly<Record<string, string>>;

export interface RenderedError {
  status: number;
  body: string;
  headers: Array<[string, string]>;
}

/** What a renderer knows of the request it answers. */
export interface RenderContext {
  /** The job id, which the surface turns into its own id shape. */
  jobId: string;
  created: number;
  request: InternalRequest;
}

export interface StreamRenderer {
  /** The first token came from `model`: the frames that open the stream. */
  start(model: string): string;
  deltas(deltas: ChoiceDelta[]): string;
  /** The end, with the usage of the model that answered. */
  finish(model: string, usage: Usage): string;
  /** A failure after the stream started: the surface's in-stream error event. */
  error(error: ErrorDescription): string;
}

export interface Surface {
  /** Names the surface in logs. */
  readonly name: string;
  /** Headers the surface reads, the key's included (authorization, or x-api-key as well). */
  readonly headerNames: readonly string[];
  parse(body: unknown, headers: SurfaceHeaders): InternalRequest;
  renderError(error: GatewayError): RenderedError;
  renderCompletion(context: RenderContext, event: Extract<JobEventBody, { type: 'completed' }>): string;
  createStream(context: RenderContext): StreamRenderer;
  /** A header naming the request that every answer of this surface carries, errors included. */
  readonly requestIdHeader?: (requestId: string) => [string, string];
}
