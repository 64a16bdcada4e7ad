import type { HttpResponse } from 'uWebSockets.js';
import type { GatewayError, ErrorDescription } from '../../shared/errors.js';
import type { ChoiceDelta, JobEventBody } from '../../shared/job.js';
import type { InternalRequest } from '../../shared/internal/request.js';
import type { Usage } from '../../shared/usage.js';
import type { ReplyState } from '../http-reply.js';
import type { JobReply } from './job-registration.js';

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

/** Who is asking: surfaces whose requests build on stored state (Responses) need the key. */
export interface Caller {
  keyId: string;
}

/** What a surface that relays its own jobs (takeOver) gets from the pipeline. */
export interface TakeoverStart {
  res: HttpResponse;
  state: ReplyState;
  context: RenderContext;
  keyId: string;
  maxQueuedStreamBytes: number;
  /** Releases the job's registration here (event routing, open requests); call once, at the end. */
  finish(): void;
  /** Stops the job wherever it runs. */
  cancelJob(): void;
  /** Answers with the surface's error shape (before anything else was sent). */
  fail(error: unknown): void;
}

/** A relaying surface answers its job as any job-backed route does (see job-registration.ts). */
export type JobTakeover = JobReply;

interface SurfaceCommon {
  /** Names the surface in logs. */
  readonly name: string;
  /** Headers the surface reads, the key's included (authorization, or x-api-key as well). */
  readonly headerNames: readonly string[];
  parse(body: unknown, headers: SurfaceHeaders, caller: Caller): InternalRequest | Promise<InternalRequest>;
  renderError(error: GatewayError): RenderedError;
  /** A header naming the request that every answer of this surface carries, errors included. */
  readonly requestIdHeader?: (requestId: string) => [string, string];
}

/** A surface whose answer is the request's own: the pipeline relays job events to its renderers. */
export interface RenderingSurface extends SurfaceCommon {
  renderCompletion(context: RenderContext, event: Extract<JobEventBody, { type: 'completed' }>): string;
  createStream(context: RenderContext): StreamRenderer;
  readonly takeOver?: undefined;
}

/**
 * A surface that relays its jobs' events itself: for answers that outlive the request
 * (Responses: stored, background, replayable).
 */
export interface RelayingSurface extends SurfaceCommon {
  readonly takeOver: (start: TakeoverStart) => JobTakeover;
}

export type Surface = RenderingSurface | RelayingSurface;
