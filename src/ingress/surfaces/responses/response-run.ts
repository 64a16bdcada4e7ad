import type { Logger } from 'pino';
import { errorFromDescription, GatewayError, type ErrorDescription } from '../../../shared/errors.js';
import type { JobEvent } from '../../../shared/job.js';
import type { LoggedEvent, ResponseEventLog } from '../../../shared/responses/response-event-log.js';
import type { Store, StoredResponse } from '../../../shared/store/store.js';
import type { PendingJob } from '../../job-router.js';
import type { ResponseEventBuilder } from './responses-events.js';

// One response, followed by the ingress that queued its job, whether or not its client stays (a
// background response outlives its request). It turns job events into Responses events, keeps
// them in the replay log (background), hands them to the live client (streams), and stores the
// response (store: true) before the client sees its end, so a follow-up request can build on it.

type Json = Record<string, unknown>;

/** How often a running background response's partial output is written, for other ingresses' GETs. */
const progressSaveMs = 1000;

export interface RunSettings {
  responseId: string;
  keyId: string;
  store: boolean;
  background: boolean;
  createdAtIso: string;
  retentionMs: number;
  inputItems: Json[];
  contextItems: Json[];
}

export interface RunHooks {
  /** Stops the job wherever it runs. */
  cancelJob(): void;
  /** Releases the job's registration in this ingress; called once, at the end. */
  finish(): void;
}

export interface RunClient {
  /** Events for a streaming client. */
  events?(events: LoggedEvent[]): void;
  /** The end: the final response object, or the failure. */
  end(outcome: { response: Json; error?: GatewayError }): void;
}

export class ResponseRun implements PendingJob {
  private chain: Promise<void> = Promise.resolve();
  private client: RunClient | undefined;
  private over = false;
  private lastProgressSave = 0;
  /** The response as it was accepted (queued, for a background request). */
  accepted: Json | undefined;

  constructor(
    private readonly settings: RunSettings,
    private readonly builder: ResponseEventBuilder,
    private readonly hooks: RunHooks,
    private readonly dependencies: { store: Store; log: ResponseEventLog; logger: Logger },
  ) {}

  /** The response as it stands. */
  snapshot(): Json {
    return this.builder.final ?? this.builder.snapshot();
  }

  attach(client: RunClient): void {
    this.client = client;
  }

  detach(): void {
    this.client = undefined;
  }

  /** The opening events, and (background) the queued response in the store, before the job is queued. */
  async begin(): Promise<void> {
    const events = this.builder.start(this.settings.background);
    this.accepted = this.builder.snapshot();
    if (this.settings.background) {
      await this.persist('queued', this.builder.snapshot('queued'), false);
      await this.dependencies.log.append(this.settings.responseId, events);
    }
    this.client?.events?.(events);
  }

  private record(status: string, response: Json): StoredResponse {
    const created = Date.parse(this.settings.createdAtIso);
    return {
      id: this.settings.responseId,
      keyId: this.settings.keyId,
      status,
      background: this.settings.background,
      response,
      inputItems: this.settings.inputItems,
      contextItems: this.settings.contextItems,
      createdAt: this.settings.createdAtIso,
      expiresAt: new Date(created + this.settings.retentionMs).toISOString(),
    };
  }

  private async persist(status: string, response: Json, onlyIfUnfinished = true): Promise<boolean> {
    if (!this.settings.store) return true;
    try {
      return await this.dependencies.store.saveResponse(this.record(status, response), { onlyIfUnfinished });
    } catch (error) {
      this.dependencies.logger.error({ err: error, responseId: this.settings.responseId }, 'could not store a response');
      return true;
    }
  }

  /** Runs steps in event order; a slow store write holds back the events after it, never reorders them. */
  private then(step: () => Promise<void> | void): void {
    this.chain = this.chain.then(step).catch((error) => this.dependencies.logger.error({ err: error, responseId: this.settings.responseId }, 'response relay failed'));
  }

  private deliver(events: LoggedEvent[]): Promise<void> | void {
    if (events.length === 0) return;
    this.client?.events?.(events);
    if (this.settings.background) return this.dependencies.log.append(this.settings.responseId, events);
  }

  onEvent(event: JobEvent): void {
    if (this.over) return;
    switch (event.type) {
      case 'accepted': {
        const events = this.builder.running();
        this.then(async () => {
          if (events.length > 0 && this.settings.background) await this.persist('in_progress', this.builder.snapshot('in_progress'));
          await this.deliver(events);
        });
        return;
      }
      case 'deltas': {
        const events = this.builder.deltas(event.deltas);
        const now = Date.now();
        if (this.settings.background && now - this.lastProgressSave >= progressSaveMs) {
          this.lastProgressSave = now;
          const progress = this.builder.snapshot('in_progress');
          this.then(async () => {
            await this.persist('in_progress', progress);
          });
        }
        this.then(() => this.deliver(events));
        return;
      }
      case 'finished':
        this.terminate(this.builder.finish(event.usage, Math.floor(Date.now() / 1000)));
        return;
      case 'completed':
        // Responses jobs always stream; a whole answer would come only from a mismatched worker.
        this.fail({ code: 'internal_error', message: 'The worker answered a streaming job with a whole response.' });
        return;
      case 'failed':
        this.fail(event.error);
        return;
      default:
        return;
    }
  }

  onGap(): void {
    this.fail({ code: 'worker_lost', message: 'Events of this response were lost between the worker and the gateway.' });
  }

  private fail(error: ErrorDescription): void {
    if (this.over) return;
    this.terminate(this.builder.fail(error), errorFromDescription(error));
  }

  private terminate(events: LoggedEvent[], error?: GatewayError): void {
    this.over = true;
    const response = this.builder.final!;
    this.then(async () => {
      // Stored before the client sees the end: its next request may name this response.
      const written = await this.persist(String(response.status), response);
      // Not written: the response was cancelled meanwhile (by another ingress); that stands.
      if (written) await this.deliver(events);
      if (this.settings.background) await this.dependencies.log.end(this.settings.responseId);
      this.client?.end({ response, error });
    });
    // Released once written: a draining ingress waits for it before closing the store.
    this.then(() => this.hooks.finish());
  }

  /** The job was never queued: nothing of this response may remain. */
  abandon(): void {
    this.over = true;
    this.hooks.finish();
    if (!this.settings.background) return;
    this.then(async () => {
      await this.dependencies.store.deleteResponse(this.settings.responseId, this.settings.keyId);
      await this.dependencies.log.end(this.settings.responseId);
    });
  }

  /** Stops the job; what was produced stays in the response. Resolves with the cancelled response. */
  async cancel(): Promise<Json> {
    if (!this.over) {
      this.over = true;
      this.hooks.cancelJob();
      const response = this.builder.cancel();
      this.then(async () => {
        await this.persist('cancelled', response);
        if (this.settings.background) await this.dependencies.log.end(this.settings.responseId);
        this.client?.end({ response });
      });
      this.then(() => this.hooks.finish());
    }
    await this.chain;
    return this.snapshot();
  }
}
