import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { QueuedJob } from '../job.js';
import { loadLuaScript, preloadLuaScripts, runLuaScript } from '../redis-lua.js';
import type { ConsumerTimings, JobConsumer, JobProducer } from './job-queue.js';
import { reconnectDelay } from './redis-connections.js';

// A queue of our own on Redis lists (SWITCHBOARD_QUEUE=lists). Per job it costs three plain list
// commands where BullMQ runs three Lua scripts of 39 commands between them (BENCHMARKS.md, "Redis
// per job"): the ingress LPUSHes the job; a worker takes it with BLMOVE into an active list of its
// own (and, while the queue is deep, the next ones in groups: lua/list-queue-take.lua); when the
// job has run, the worker LREMs it (the removals of one event-loop turn share one round trip). Liveness is per worker process, not per job: each worker keeps an alive key fresh
// (SET PX) and, every stalled interval, any worker hands the active jobs of workers whose alive
// key lapsed back to the queue, once (lua/list-queue-reclaim.lua); the first-token claim keeps a
// re-run from repeating content, as with BullMQ.
//
// Keys, under one hash tag so that a cluster keeps them on one slot (sharding would name several
// queues, {queue-0} ... {queue-N}):
//   <prefix>:{queue}:wait             list of "<reruns>\n<job JSON>", LPUSH in, taken from the right
//   <prefix>:{queue}:workers          set of worker ids
//   <prefix>:{queue}:active:<worker>  list of the jobs a worker took and has not finished
//   <prefix>:{queue}:alive:<worker>   present while the worker lives (TTL: the lock duration)

const RECLAIM = loadLuaScript(new URL('./lua/list-queue-reclaim.lua', import.meta.url));
const RELEASE = loadLuaScript(new URL('./lua/list-queue-release.lua', import.meta.url));
const TAKE = loadLuaScript(new URL('./lua/list-queue-take.lua', import.meta.url));

/** A job may run again once after its worker died; a second death drops it (as BullMQ's maxStalledCount 1). */
const MAX_RERUNS = 1;
/** A take blocks at most this long before it is sent again (and sees a shutdown). */
const TAKE_BLOCK_SECONDS = 5;
/** The most jobs one non-blocking take moves at once. */
const TAKE_BATCH = 32;

export class ListQueueNames {
  readonly wait: string;
  readonly workers: string;
  readonly base: string;

  constructor(prefix: string) {
    this.base = `${prefix}:{queue}:`;
    this.wait = `${this.base}wait`;
    this.workers = `${this.base}workers`;
  }

  active(workerId: string): string {
    return `${this.base}active:${workerId}`;
  }

  alive(workerId: string): string {
    return `${this.base}alive:${workerId}`;
  }
}

export function encodeElement(job: QueuedJob, reruns = 0): string {
  // JSON never holds a raw newline, so the first one ends the re-run count.
  return `${reruns}\n${JSON.stringify(job)}`;
}

function decodeElement(element: string): QueuedJob {
  return JSON.parse(element.slice(element.indexOf('\n') + 1)) as QueuedJob;
}

export class ListJobProducer implements JobProducer {
  private readonly names: ListQueueNames;

  constructor(prefix: string, private readonly redis: Redis) {
    this.names = new ListQueueNames(prefix);
  }

  async add(job: QueuedJob): Promise<void> {
    await this.redis.lpush(this.names.wait, encodeElement(job));
  }

  waitingCount(): Promise<number> {
    return this.redis.llen(this.names.wait);
  }

  async close(): Promise<void> {}
}

export interface ListConsumerOptions extends ConsumerTimings {
  prefix: string;
  workerId: string;
  /** Commands that must not wait for a reconnect (heartbeats, removals, the sweep). */
  commands: Redis;
  /** The connection that blocks in BLMOVE; closed by close(). */
  blocking: Redis;
  logger?: Logger;
}

export class ListJobConsumer implements JobConsumer {
  private readonly names: ListQueueNames;
  private readonly active: string;
  private readonly alive: string;
  private readonly running = new Set<Promise<void>>();
  private readonly removals: string[] = [];
  private removalScheduled = false;
  private slotFreed?: () => void;
  private loop?: Promise<void>;
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private closed?: Promise<void>;

  constructor(private readonly options: ListConsumerOptions) {
    this.names = new ListQueueNames(options.prefix);
    this.active = this.names.active(options.workerId);
    this.alive = this.names.alive(options.workerId);
  }

  async start(run: (job: QueuedJob) => Promise<void>, concurrency: number): Promise<void> {
    preloadLuaScripts(this.options.commands, [RECLAIM, RELEASE, TAKE]);
    // Alive before the first take: a sweep must never find a job of ours without our alive key.
    await this.beat();
    const every = (ms: number, task: () => Promise<unknown>, what: string) => {
      // One line per outage, not one per tick (the connection logs its own loss and recovery).
      let failing = false;
      const timer = setInterval(() => task().then(
        () => (failing = false),
        (error: Error) => {
          if (!failing) this.options.logger?.warn({ err: error.message }, what);
          failing = true;
        },
      ), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(Math.max(50, Math.floor(this.options.lockDurationMs / 3)), () => this.beat(), 'could not renew the worker heartbeat');
    every(this.options.stalledIntervalMs, () => this.reclaim(), 'could not look for the jobs of stopped workers');
    this.loop = this.takeJobs(run, Math.max(1, concurrency));
  }

  close(): Promise<void> {
    this.closed ??= this.shutDown();
    return this.closed;
  }

  private async shutDown(): Promise<void> {
    this.stopping = true;
    this.slotFreed?.();
    // Ends a pending BLMOVE at once; a job it moved just before is handed back below.
    this.options.blocking.disconnect();
    await this.loop;
    await Promise.all(this.running);
    for (const timer of this.timers) clearInterval(timer);
    await this.removeFinished();
    await runLuaScript(this.options.commands, RELEASE, [this.names.workers, this.names.wait, this.active, this.alive], [this.options.workerId])
      .catch((error: Error) => this.options.logger?.warn({ err: error.message }, 'could not hand back unstarted jobs; they return once this worker\'s heartbeat lapses'));
  }

  private async takeJobs(run: (job: QueuedJob) => Promise<void>, concurrency: number): Promise<void> {
    let failures = 0;
    // A job arriving while others run means the queue may hold more: take them without blocking,
    // in groups, until a take comes back short; then block for the next one. A job arriving at an
    // idle worker is taken alone, so that light traffic costs no take that finds nothing.
    let mayHoldMore = false;
    while (!this.stopping) {
      const free = concurrency - this.running.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
        continue;
      }
      let elements: string[];
      try {
        if (mayHoldMore) {
          const wanted = Math.min(free, TAKE_BATCH);
          elements = (await runLuaScript(this.options.commands, TAKE, [this.names.wait, this.active], [wanted])) as string[];
          mayHoldMore = elements.length === wanted;
        } else {
          const element = await this.options.blocking.blmove(this.names.wait, this.active, 'RIGHT', 'LEFT', TAKE_BLOCK_SECONDS);
          elements = element === null ? [] : [element];
          mayHoldMore = element !== null && this.running.size > 0;
        }
        failures = 0;
      } catch (error) {
        if (this.stopping) return;
        mayHoldMore = false;
        this.options.logger?.warn({ err: (error as Error).message }, 'could not take a job; retrying');
        await new Promise((resolve) => setTimeout(resolve, reconnectDelay(++failures)));
        continue;
      }
      // Jobs taken as shutdown began stay in the active list, and shutDown hands them back.
      if (this.stopping) continue;
      for (const element of elements) this.runElement(element, run);
    }
  }

  private runElement(element: string, run: (job: QueuedJob) => Promise<void>): void {
    let job: QueuedJob;
    try {
      job = decodeElement(element);
    } catch {
      this.options.logger?.error('dropped an unreadable job from the queue');
      this.remove(element);
      return;
    }
    const done: Promise<void> = run(job)
      .catch((error: unknown) => this.options.logger?.error({ err: error, jobId: job.id }, 'job failed in the queue consumer'))
      .finally(() => {
        this.running.delete(done);
        this.remove(element);
        const wake = this.slotFreed;
        this.slotFreed = undefined;
        wake?.();
      });
    this.running.add(done);
  }

  /** Finished jobs leave the active list in one round trip per event-loop turn. */
  private remove(element: string): void {
    this.removals.push(element);
    if (this.removalScheduled) return;
    this.removalScheduled = true;
    setImmediate(() => {
      this.removalScheduled = false;
      this.removeFinished().catch(() => undefined);
    });
  }

  private async removeFinished(): Promise<void> {
    if (this.removals.length === 0) return;
    const batch = this.removals.splice(0);
    const pipeline = this.options.commands.pipeline();
    for (const element of batch) pipeline.lrem(this.active, 1, element);
    try {
      const results = (await pipeline.exec()) ?? [];
      // Kept for the next heartbeat when Redis could not be reached: a finished job left in the
      // active list would be handed back, and run again, when this worker stops.
      results.forEach(([error], index) => {
        if (error) this.removals.push(batch[index]!);
      });
    } catch (error) {
      this.removals.push(...batch);
      throw error;
    }
  }

  private async beat(): Promise<void> {
    const replies = await this.options.commands
      .pipeline()
      .set(this.alive, '1', 'PX', this.options.lockDurationMs)
      .sadd(this.names.workers, this.options.workerId)
      .exec();
    const added = replies?.[1]?.[1];
    if (added === 1 && this.timers.length > 0) {
      this.options.logger?.warn('this worker was taken for stopped (no heartbeat within the lock duration); its running jobs may have been handed to another worker');
    }
    await this.removeFinished();
  }

  private async reclaim(): Promise<void> {
    const [requeued, dropped] = (await runLuaScript(this.options.commands, RECLAIM, [this.names.workers, this.names.wait], [this.names.base, MAX_RERUNS])) as [number, string[]];
    if (requeued > 0) this.options.logger?.warn({ requeued }, 'handed the jobs of a stopped worker back to the queue');
    for (const job of dropped) {
      let jobId: string | undefined;
      try {
        jobId = (JSON.parse(job) as QueuedJob).id;
      } catch {
        jobId = undefined;
      }
      this.options.logger?.warn({ jobId }, 'dropped a job whose workers stopped twice while running it');
    }
  }
}
