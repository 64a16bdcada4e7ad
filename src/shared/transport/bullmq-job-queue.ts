import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { QueuedJob } from '../job.js';
import type { ConsumerTimings, JobConsumer, JobProducer } from './job-queue.js';
import type { RedisNames } from './redis-connections.js';

// The BullMQ queue (SWITCHBOARD_QUEUE=bullmq, the default). BullMQ retries are off (the fallback
// chain is the retry policy); a job whose worker died is re-queued once its lock lapses, at most
// once (maxStalledCount), and the first-token claim keeps a re-run from repeating content.

export class BullMqProducer implements JobProducer {
  private readonly queue: Queue;

  constructor(names: RedisNames, connection: Redis, logger?: Logger) {
    this.queue = new Queue(names.queue, {
      connection,
      prefix: names.bullPrefix,
      defaultJobOptions: { attempts: 1, removeOnComplete: true, removeOnFail: true },
    });
    this.queue.on('error', (error) => logger?.warn({ err: error.message }, 'queue error'));
  }

  async add(job: QueuedJob): Promise<void> {
    await this.queue.add('completion', job, { jobId: job.id });
  }

  waitingCount(): Promise<number> {
    return this.queue.getWaitingCount();
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

export class BullMqConsumer implements JobConsumer {
  private worker?: Worker;

  constructor(
    private readonly names: RedisNames,
    private readonly connection: Redis,
    private readonly workerId: string,
    private readonly timings: ConsumerTimings,
    private readonly logger?: Logger,
  ) {}

  async start(run: (job: QueuedJob) => Promise<void>, concurrency: number): Promise<void> {
    this.worker = new Worker(this.names.queue, (job: Job) => run(job.data as QueuedJob), {
      connection: this.connection,
      prefix: this.names.bullPrefix,
      concurrency,
      lockDuration: this.timings.lockDurationMs,
      stalledInterval: this.timings.stalledIntervalMs,
      maxStalledCount: 1,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
      name: this.workerId,
    });
    this.worker.on('error', (error) => this.logger?.warn({ err: error.message }, 'worker queue error'));
    await this.worker.waitUntilReady();
  }

  async close(): Promise<void> {
    await this.worker?.close();
  }
}
