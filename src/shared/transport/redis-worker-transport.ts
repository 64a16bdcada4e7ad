import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ErrorDescription } from '../errors.js';
import type { QueuedJob, JobEventBody } from '../job.js';
import { revokedKey } from '../counters/redis-counters.js';
import { BullMqConsumer } from './bullmq-job-queue.js';
import type { JobConsumer, QueueKind } from './job-queue.js';
import { ListJobConsumer } from './list-job-queue.js';
import { openRedis, quitQuietly, RedisNames, waitUntilReady } from './redis-connections.js';
import { RedisEventBatcher, type DeliveryProblem } from './redis-event-batcher.js';
import type { JobControl, JobHandler, WorkerTransport } from './transport.js';

// The scaled-out transport, worker side: a queue consumer (BullMQ's worker, or lists of our own:
// job-queue.ts) takes jobs, events go back batched per ingress channel, a heartbeat per
// quiet running job lets the ingress tell a dead worker from a slow provider, and a broadcast
// channel carries cancellations to whichever worker holds a job.

export interface RedisWorkerOptions {
  redisUrl: string;
  prefix: string;
  /** The queue that carries jobs to workers (SWITCHBOARD_QUEUE); every process of a deployment must use the same. */
  queue?: QueueKind;
  logger?: Logger;
  /** A running job that published nothing for this long gets a heartbeat event. */
  heartbeatMs?: number;
  /** How long a worker may be silent before its running jobs are re-queued (BullMQ: the job lock). */
  lockDurationMs?: number;
  /** How often workers look for the jobs of stopped workers (BullMQ: jobs whose lock lapsed). */
  stalledIntervalMs?: number;
  /** How long the first-token claim of a job is remembered. */
  claimTtlMs?: number;
  /**
   * The counters are the Redis counters of this prefix: read the job key's revocation flag with the
   * cancelled check (one round trip) and hand it to the handler as control.keyRevoked.
   */
  readsKeyRevocation?: boolean;
  /**
   * A job that is not run: its client had gone ('cancelled'), an earlier run already streamed
   * content ('claimed', failed instead of re-run), or it could not be checked ('failed', Redis
   * unreachable). The worker process releases its reservation here.
   */
  onDropped?: (job: QueuedJob, reason: 'cancelled' | 'claimed' | 'failed') => Promise<void>;
}

interface Run {
  job: QueuedJob;
  channel: string;
  controller: AbortController;
  seq: number;
  lastPublishAt: number;
  started: boolean;
  claimed: boolean;
  /** A terminal event went out; later publishes of this run are dropped. */
  finalized: boolean;
  /** The key's revocation flag, read with the cancelled check as the run starts. */
  keyRevoked?: boolean;
}

const terminal = new Set<JobEventBody['type']>(['finished', 'completed', 'failed']);

export class RedisWorkerTransport implements WorkerTransport {
  readonly workerId = `worker-${randomUUID()}`;
  readonly names: RedisNames;
  private readonly commands: Redis;
  private readonly subscriber: Redis;
  private readonly queueConnection: Redis;
  private readonly batcher: RedisEventBatcher;
  private readonly running = new Map<string, Run>();
  private consumer?: JobConsumer;
  private heartbeat?: NodeJS.Timeout;
  private closing?: Promise<void>;

  constructor(private readonly options: RedisWorkerOptions) {
    this.names = new RedisNames(options.prefix);
    this.commands = openRedis(options.redisUrl, 'fail-fast', `sb:${this.workerId}:commands`, options.logger);
    this.subscriber = openRedis(options.redisUrl, 'subscriber', `sb:${this.workerId}:cancel`, options.logger);
    this.queueConnection = openRedis(options.redisUrl, 'worker', `sb:${this.workerId}:queue`, options.logger);
    this.batcher = new RedisEventBatcher(this.commands, this.onDeliveryProblem);
  }

  /** Jobs running in this process now. */
  get active(): number {
    return this.running.size;
  }

  async start(handler: JobHandler, options: { concurrency: number }): Promise<void> {
    const url = this.options.redisUrl;
    await Promise.all([waitUntilReady(this.commands, url), waitUntilReady(this.subscriber, url), waitUntilReady(this.queueConnection, url)]);
    this.subscriber.on('message', (_channel: string, jobId: string) => this.running.get(jobId)?.controller.abort());
    await this.subscriber.subscribe(this.names.cancelChannel);
    const timings = { lockDurationMs: this.options.lockDurationMs ?? 3000, stalledIntervalMs: this.options.stalledIntervalMs ?? 1000 };
    this.consumer = this.options.queue === 'lists'
      ? new ListJobConsumer({ ...timings, prefix: this.options.prefix, workerId: this.workerId, commands: this.commands, blocking: this.queueConnection, logger: this.options.logger })
      : new BullMqConsumer(this.names, this.queueConnection, this.workerId, timings, this.options.logger);
    await this.consumer.start((job) => this.process(job, handler), Math.max(1, options.concurrency));
    const every = this.options.heartbeatMs ?? 1000;
    this.heartbeat = setInterval(() => this.sendHeartbeats(every), Math.max(50, Math.floor(every / 2)));
    this.heartbeat.unref();
  }

  close(deadlineMs = 30_000): Promise<void> {
    this.closing ??= this.shutDown(deadlineMs);
    return this.closing;
  }

  private async shutDown(deadlineMs: number): Promise<void> {
    const consumer = this.consumer;
    if (consumer) {
      // Stops taking jobs at once and resolves when the running ones have finished.
      const finished = consumer.close();
      const timer = setTimeout(() => this.abandonAll('The worker shutting down could not finish this request in time.'), deadlineMs);
      await finished.catch((error: Error) => this.options.logger?.warn({ err: error.message }, 'worker close failed'));
      clearTimeout(timer);
    }
    clearInterval(this.heartbeat);
    await this.batcher.flushAll();
    await Promise.all([quitQuietly(this.subscriber), quitQuietly(this.commands), quitQuietly(this.queueConnection)]);
  }

  private async process(job: QueuedJob, handler: JobHandler): Promise<void> {
    const run: Run = {
      job,
      channel: this.names.events(job.replyTo),
      controller: new AbortController(),
      seq: 0,
      lastPublishAt: Date.now(),
      started: false,
      claimed: false,
      finalized: false,
    };
    // Registered before the check below, so a cancellation arriving meanwhile is not missed.
    this.running.set(job.id, run);
    const control = this.controlFor(run);
    let handed = false;
    try {
      // One round trip: the job's cancelled and claimed flags (one hash slot) and its key's
      // revocation flag (the key gate's check, handed to the handler through control.keyRevoked).
      const checks = this.commands.pipeline().mget(this.names.cancelled(job.id), this.names.claim(job.id));
      if (this.options.readsKeyRevocation) checks.exists(revokedKey(this.names.counters, job.keyId));
      const [flags, revoked] = ((await checks.exec()) ?? []).map(([error, value]) => {
        if (error) throw error;
        return value;
      }) as [(string | null)[], number | undefined];
      const [cancelled, claimed] = flags;
      if (revoked !== undefined) run.keyRevoked = revoked === 1;
      if (cancelled || run.controller.signal.aborted) {
        await this.options.onDropped?.(job, 'cancelled');
        return;
      }
      if (claimed) {
        // An earlier run (its worker died) already streamed content: fail rather than repeat it.
        control.publish({ type: 'accepted', worker: this.workerId });
        control.publish({ type: 'failed', error: { code: 'worker_lost', message: 'The worker streaming this response stopped; the response is incomplete and was not retried, to avoid repeating content.' }, started: true });
        await control.flush();
        await this.options.onDropped?.(job, 'claimed');
        return;
      }
      handed = true;
      await handler(job, control);
      await control.flush();
    } catch (error) {
      this.options.logger?.error({ err: error, jobId: job.id }, 'job failed in the worker transport');
      if (!handed) await this.options.onDropped?.(job, 'failed').catch(() => undefined);
      if (!run.finalized) {
        control.publish({ type: 'failed', error: { code: 'internal_error', message: 'The gateway failed while running this request.' }, started: run.started });
        await control.flush();
      }
    } finally {
      this.running.delete(job.id);
    }
  }

  private controlFor(run: Run): JobControl {
    const claimKey = this.names.claim(run.job.id);
    const claimTtlMs = this.options.claimTtlMs ?? 15 * 60_000;
    const runId = `${this.workerId}:${randomUUID()}`;
    return {
      signal: run.controller.signal,
      publish: (body) => {
        if (run.finalized) return;
        if (terminal.has(body.type)) run.finalized = true;
        if (body.type === 'started') run.started = true;
        run.lastPublishAt = Date.now();
        this.batcher.add(run.channel, { ...body, jobId: run.job.id, seq: run.seq++ });
      },
      claimFirstToken: async () => {
        if (run.claimed) return true;
        run.claimed = (await this.commands.set(claimKey, runId, 'PX', claimTtlMs, 'NX')) === 'OK';
        return run.claimed;
      },
      flush: () => this.batcher.flush(run.channel),
      get keyRevoked() {
        return run.keyRevoked;
      },
    };
  }

  private sendHeartbeats(everyMs: number): void {
    const quietSince = Date.now() - everyMs * 0.8;
    for (const run of this.running.values()) {
      // Only after the run's own first event ('accepted', seq 0), which restarts the ingress's sequence.
      if (run.seq > 0 && !run.finalized && run.lastPublishAt <= quietSince) {
        run.lastPublishAt = Date.now();
        this.batcher.add(run.channel, { type: 'heartbeat', jobId: run.job.id, seq: run.seq++ });
      }
    }
  }

  /** Ends every running job with a failure event and stops it (shutdown deadline reached). */
  private abandonAll(message: string): void {
    for (const run of this.running.values()) {
      if (run.finalized) continue;
      const error: ErrorDescription = { code: 'service_unavailable', message };
      this.controlFor(run).publish({ type: 'failed', error, started: run.started });
      run.controller.abort();
    }
  }

  /** Nobody received a batch: the ingress holding these clients is gone, or Redis is. Stop paying. */
  private readonly onDeliveryProblem = (channel: string, jobIds: Set<string>, problem: DeliveryProblem): void => {
    for (const jobId of jobIds) {
      const run = this.running.get(jobId);
      if (!run || run.channel !== channel || run.controller.signal.aborted) continue;
      this.options.logger?.info({ jobId, problem }, 'events could not reach the client; stopping the job');
      run.controller.abort();
    }
  };
}
