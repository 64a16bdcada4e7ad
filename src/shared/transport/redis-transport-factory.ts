import type { Logger } from 'pino';
import type { GatewayConfig } from '../config.js';
import type { ScaleOutSettings } from '../deployment.js';
import type { QueuedJob } from '../job.js';
import type { LostJob } from './lost-job-tracker.js';
import { RedisIngressTransport } from './redis-transport.js';
import { RedisWorkerTransport } from './redis-worker-transport.js';

// The Redis transports configured from the deployment's settings, in one place for the `web`
// process, the `worker` process and `npm start` with REDIS_URL. Imported lazily by the embedded
// default so that it never loads BullMQ.

export function createRedisIngressTransport(
  redisUrl: string,
  settings: ScaleOutSettings,
  config: GatewayConfig,
  logger: Logger,
  onKeyChange: (publicId: string | undefined) => void,
  onWorkerLost?: (lost: LostJob) => void,
): RedisIngressTransport {
  return new RedisIngressTransport({
    redisUrl,
    prefix: settings.redisPrefix,
    queue: settings.queue,
    maxQueued: config.maxQueuedJobs,
    logger,
    watchdog: { silenceMs: settings.workerSilenceMs, rerunWaitMs: settings.rerunWaitMs, queueWaitMs: settings.queueWaitMs },
    // null: changes may have been missed (a reconnect), so every cached record is dropped.
    onKeyChange: (publicId) => onKeyChange(publicId ?? undefined),
    onWorkerLost,
  });
}

export function createRedisWorkerTransport(
  redisUrl: string,
  settings: ScaleOutSettings,
  logger: Logger,
  onDropped: (job: QueuedJob, reason: string) => Promise<void>,
): RedisWorkerTransport {
  return new RedisWorkerTransport({
    redisUrl,
    prefix: settings.redisPrefix,
    queue: settings.queue,
    logger,
    heartbeatMs: settings.heartbeatMs,
    lockDurationMs: settings.jobLockMs,
    stalledIntervalMs: settings.stalledCheckMs,
    // Every process that builds this transport runs the Redis counters of the same prefix.
    readsKeyRevocation: true,
    onDropped,
  });
}
