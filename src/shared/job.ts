import type { EmbeddingsRequest } from './embeddings/embeddings-request.js';
import type { ErrorDescription } from './errors.js';
import type { InternalRequest } from './internal/request.js';
import type { CompletionChoice, FinishDetail, FinishReason, StreamDeltaPart } from './providers/chat-adapter.js';
import type { ProjectCharge } from './counters/counters.js';
import type { BudgetPeriod } from './store/store.js';
import type { Usage } from './usage.js';
import type { TraceCarrier } from './observability/tracing.js';

/** Everything a worker needs to run one completion; small, since it crosses Redis when scaled out. */
export interface CompletionJob {
  /** Absent on jobs queued before job kinds existed, which are all completions. */
  kind?: 'completion';
  id: string;
  /** The ingress process holding the client; its channel carries this job's events. */
  replyTo: string;
  keyId: string;
  /** Model IDs to try in order: the requested model, then its fallbacks. */
  targets: string[];
  request: InternalRequest;
  stream: boolean;
  /** A budget reservation to settle when the job ends, if admission made one. */
  reservationId?: string;
  reservedNanos?: number;
  budgetPeriod?: BudgetPeriod;
  /** The key's project, when admission reserved against it too: settled at both levels. */
  project?: ProjectCharge;
  /** Set when the key or its project has budget alerts: the worker checks them after settling. */
  alerting?: true;
  /** When the key expires (ISO 8601): a job still queued then is refused before it starts. */
  keyExpiresAt?: string;
  enqueuedAt: number;
  /** W3C trace context of the ingress's request span, when tracing is on (one trace across processes). */
  trace?: TraceCarrier;
}

/** An embeddings request (POST /v1/embeddings): the same queue, admission and settlement, no stream. */
export interface EmbeddingsJob extends Omit<CompletionJob, 'kind' | 'request' | 'stream'> {
  kind: 'embeddings';
  request: EmbeddingsRequest;
  stream: false;
}

/** What the transport carries; workers dispatch on `kind`. */
export type QueuedJob = CompletionJob | EmbeddingsJob;

export interface AttemptRecord {
  model: string;
  provider: string;
  /** `<provider>/<upstream model>` that was tried; absent when no deployment was reached (unknown model). */
  deployment?: string;
  /** `cooling_down`: every deployment of the model was in a cool-down, so none was called. */
  outcome: 'success' | 'rate_limit' | 'overloaded' | 'server_error' | 'timeout' | 'connection' | 'bad_request' | 'auth' | 'not_found' | 'cancelled' | 'internal' | 'not_configured' | 'cooling_down' | 'error_after_first_token' | 'worker_lost';
  status?: number;
  message?: string;
  latencyMs: number;
  /** Streams that answered: from the attempt's start to its first content (the dashboard's time to first token). */
  firstTokenMs?: number;
}

/** A piece of one choice as the ingress receives it: new output (see StreamDeltaPart), or its finish. */
export interface ChoiceDelta extends Omit<StreamDeltaPart, 'type'> {
  finishReason?: FinishReason;
  finishDetail?: FinishDetail;
}

/**
 * Events a worker publishes for one job, in order. `seq` starts at 0 and grows by one per event so
 * the ingress can tell a gap (lost event) from silence.
 */
export type JobEventBody =
  /** The worker took the job (sent again if another worker picks it up after a crash). */
  | { type: 'accepted'; worker: string }
  /** Streams only: the first token arrived from `model`; from here on nothing falls back. */
  | { type: 'started'; model: string }
  | { type: 'deltas'; deltas: ChoiceDelta[] }
  /** Streams: the end, with the usage of the model that answered. */
  | { type: 'finished'; model: string; usage: Usage }
  /** Non-streaming: the whole answer. */
  | {
      type: 'completed';
      model: string;
      choices: CompletionChoice[];
      usage: Usage;
      systemFingerprint?: string;
      /** Embeddings jobs (with no choices): one vector per input, in input order, as base64 float32. */
      embeddings?: string[];
    }
  /** Failure; `started` tells whether content already reached the client. */
  | { type: 'failed'; error: ErrorDescription; started: boolean }
  | { type: 'heartbeat' };

export type JobEvent = JobEventBody & { jobId: string; seq: number };
