import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { GatewayError } from '../errors.js';
import type { QueuedJob, JobEvent } from '../job.js';
import { BullMqProducer } from './bullmq-job-queue.js';
import type { JobProducer, QueueKind } from './job-queue.js';
import { ListJobProducer } from './list-job-queue.js';
import { defaultWatchdogTimings, JobWatchdog, type WatchdogTimings } from './job-watchdog.js';
import { LostJobTracker, type LostJob } from './lost-job-tracker.js';
import { asUnavailable, openRedis, quitQuietly, RedisNames, waitUntilReady } from './redis-connections.js';
import type { IngressTransport, JobEventListener } from './transport.js';

export { RedisWorkerTransport, type RedisWorkerOptions } from './redis-worker-transport.js';

// The scaled-out transport, ingress side: jobs go into the queue (BullMQ, or lists of our own:
// job-queue.ts); events come back on ONE pub/sub channel per ingress process (subscribed once,
// before any job is enqueued), each message a batch of events that name their job. Same contract
// and conformance suite as the in-process transport. Measurements behind these choices:
// docs/scale-out.md.

export interface RedisIngressOptions {
  redisUrl: string;
  /** Prefix of every key, channel and queue (SWITCHBOARD_REDIS_PREFIX). */
  prefix: string;
  /** The queue that carries jobs to workers (SWITCHBOARD_QUEUE); every process of a deployment must use the same. */
  queue?: QueueKind;
  /** Jobs allowed to wait for a worker before enqueue answers `overloaded` (SWITCHBOARD_MAX_QUEUED_JOBS). */
  maxQueued: number;
  logger?: Logger;
  watchdog?: Partial<WatchdogTimings>;
  /** A key changed through some ingress (`null`: changes may have been missed; drop every cached key). */
  onKeyChange?: (publicId: string | null) => void;
  /** A job ended with `worker_lost` after its first token: bill what was delivered (lost-worker-settlement.ts). */
  onWorkerLost?: (lost: LostJob) => void;
}

/** Cancelled flags outlive any job that could still be waiting in the queue. */
const CANCEL_FLAG_TTL_MS = 15 * 60_000;
/** How long a key change waits for every ingress to confirm it dropped the cached record. */
const KEY_ACK_WAIT_MS = 2_000;
/** Queue depth is re-read at most this often while requests flow (never when idle). */
const DEPTH_REFRESH_MS = 100;

export class RedisIngressTransport implements IngressTransport {
  readonly ingressId = `ingress-${randomUUID()}`;
  readonly names: RedisNames;
  private readonly commands: Redis;
  private readonly subscriber: Redis;
  private producer?: JobProducer;
  private listener?: JobEventListener;
  private readonly watchdog: JobWatchdog;
  private readonly lostJobs = new LostJobTracker();
  private closing = false;
  private subscribedOnce = false;
  // Queue depth: the last measured waiting count plus the jobs this process added since.
  private adds = 0;
  private measured = 0;
  private addsAtMeasure = 0;
  private measuredAt = 0;
  private refreshing?: Promise<void>;

  constructor(private readonly options: RedisIngressOptions) {
    this.names = new RedisNames(options.prefix);
    this.commands = openRedis(options.redisUrl, 'fail-fast', `sb:${this.ingressId}:commands`, options.logger);
    this.subscriber = openRedis(options.redisUrl, 'subscriber', `sb:${this.ingressId}:events`, options.logger);
    this.watchdog = new JobWatchdog({ ...defaultWatchdogTimings, ...options.watchdog }, (event) => {
      this.deliver(event);
      this.billIfLost(event);
      this.cancel(event.jobId);
    });
  }

  /** Jobs this ingress is waiting on (for tests and health output). */
  get inFlight(): number {
    return this.watchdog.size;
  }

  async start(listener: JobEventListener): Promise<void> {
    this.listener = listener;
    await Promise.all([waitUntilReady(this.commands, this.options.redisUrl), waitUntilReady(this.subscriber, this.options.redisUrl)]);
    this.subscriber.on('message', this.onMessage);
    this.subscriber.on('ready', () => {
      // Back after an outage: events and key changes published meanwhile are gone.
      if (!this.subscribedOnce || this.closing) return;
      this.watchdog.suspectAll();
      this.options.onKeyChange?.(null);
    });
    await this.subscriber.subscribe(this.names.events(this.ingressId), this.names.keyChannel);
    this.subscribedOnce = true;
    this.producer = this.options.queue === 'lists'
      ? new ListJobProducer(this.options.prefix, this.commands)
      : new BullMqProducer(this.names, this.commands, this.options.logger);
    await this.refreshDepth();
    this.watchdog.start();
  }

  async enqueue(job: QueuedJob): Promise<void> {
    const producer = this.producer;
    if (!producer || this.closing) throw new GatewayError('service_unavailable', 'The gateway is shutting down.');
    try {
      if (Date.now() - this.measuredAt > DEPTH_REFRESH_MS) this.refreshDepth().catch(() => undefined);
      if (this.depth() >= this.options.maxQueued) {
        // Confirm with a fresh count before refusing: the estimate never subtracts taken jobs.
        await this.refreshDepth();
        if (this.depth() >= this.options.maxQueued) {
          throw new GatewayError('overloaded', `The gateway is saturated (${this.depth()} requests waiting for a worker); try again shortly.`, { retryAfterSeconds: 1 });
        }
      }
      this.watchdog.watch(job.id);
      if (this.options.onWorkerLost && job.kind !== 'embeddings') this.lostJobs.track(job);
      this.adds += 1;
      await producer.add(job);
    } catch (error) {
      this.watchdog.forget(job.id);
      this.lostJobs.forget(job.id);
      throw asUnavailable(error, 'queue this request');
    }
  }

  /** One LLEN-like count per scrape, not per request. */
  async waitingCount(): Promise<number> {
    return this.producer ? this.producer.waitingCount() : 0;
  }

  cancel(jobId: string): void {
    this.watchdog.forget(jobId);
    // The client left: a live worker settles the job itself.
    this.lostJobs.forget(jobId);
    // The flag stops a worker that has not taken the job yet; the broadcast stops the one running it.
    this.commands
      .pipeline()
      .set(this.names.cancelled(jobId), '1', 'PX', CANCEL_FLAG_TTL_MS)
      .publish(this.names.cancelChannel, jobId)
      .exec()
      .catch((error: Error) => this.options.logger?.warn({ jobId, err: error.message }, 'could not send a cancellation'));
  }

  /**
   * Tells every ingress (this one included) to drop its cached record of a key, and resolves once
   * each of them has confirmed it did (or after KEY_ACK_WAIT_MS). The admin API answers only
   * then, so a client's next request, to any ingress, sees the change. Never rejects.
   */
  async announceKeyChange(publicId: string): Promise<void> {
    const ackKey = `${this.names.keyChannel}:ack:${randomUUID()}`;
    try {
      const receivers = await this.commands.publish(this.names.keyChannel, `${publicId}\n${ackKey}`);
      const deadline = performance.now() + KEY_ACK_WAIT_MS;
      let acks = 0;
      while ((acks = await this.commands.llen(ackKey)) < receivers && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      if (acks < receivers) this.options.logger?.warn({ receivers, acks }, 'not every ingress confirmed a key change in time; the rest see it when their cache expires');
      await this.commands.del(ackKey);
    } catch (error) {
      this.options.logger?.warn({ err: (error as Error).message }, 'could not broadcast a key change; other ingresses see it when their cache expires');
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.watchdog.stop();
    await this.producer?.close().catch(() => undefined);
    await Promise.all([quitQuietly(this.subscriber), quitQuietly(this.commands)]);
  }

  private depth(): number {
    return this.measured + (this.adds - this.addsAtMeasure);
  }

  private refreshDepth(): Promise<void> {
    if (this.refreshing) return this.refreshing;
    const producer = this.producer!;
    const snapshot = this.adds;
    this.refreshing = producer
      .waitingCount()
      .then((count) => {
        this.measured = count;
        this.addsAtMeasure = snapshot;
        this.measuredAt = Date.now();
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  private readonly onMessage = (channel: string, message: string): void => {
    if (channel === this.names.keyChannel) {
      // "<publicId>\n<ack list>": drop the record, then confirm to the announcing ingress.
      const [publicId, ackKey] = message.split('\n');
      this.options.onKeyChange?.(publicId!);
      if (ackKey) {
        this.commands.multi().rpush(ackKey, this.ingressId).pexpire(ackKey, KEY_ACK_WAIT_MS * 5).exec()
          .catch((error: Error) => this.options.logger?.warn({ err: error.message }, 'could not confirm a key change'));
      }
      return;
    }
    let events: JobEvent[];
    try {
      events = JSON.parse(message) as JobEvent[];
    } catch {
      this.options.logger?.error({ channel }, 'unreadable event batch');
      return;
    }
    for (const event of events) {
      this.watchdog.observe(event);
      this.deliver(event);
      this.billIfLost(event);
    }
  };

  private billIfLost(event: JobEvent): void {
    const lost = this.lostJobs.observe(event);
    if (!lost) return;
    try {
      this.options.onWorkerLost?.(lost);
    } catch (error) {
      this.options.logger?.error({ err: error, jobId: event.jobId }, 'could not bill a lost worker\'s stream');
    }
  }

  private deliver(event: JobEvent): void {
    try {
      this.listener?.(event);
    } catch (error) {
      this.options.logger?.error({ err: error, jobId: event.jobId }, 'job event listener failed');
    }
  }
}
