import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { GatewayError } from '../errors.js';

// Redis connections and names for the scaled-out deployment. Every key, channel and BullMQ queue
// lives under one prefix (SWITCHBOARD_REDIS_PREFIX), so deployments and test runs sharing one
// Redis never see each other's jobs, events or counters.

export type ConnectionRole =
  /** Ingress request path: fails at once while Redis is unreachable (503), never queues. */
  | 'fail-fast'
  /** Pub/sub subscriber: resubscribes by itself after a reconnect. */
  | 'subscriber'
  /** Workers: BullMQ's blocking and lock connections (maxRetriesPerRequest null). */
  | 'worker';

/** Reconnects quickly (100 ms, growing to 1 s) so service resumes soon after Redis returns. */
export function reconnectDelay(times: number): number {
  return Math.min(100 * times, 1000);
}

export function openRedis(url: string, role: ConnectionRole, name: string, logger?: Logger): Redis {
  const base: RedisOptions = { connectionName: name, retryStrategy: reconnectDelay, connectTimeout: 2000, lazyConnect: false };
  const byRole: Record<ConnectionRole, RedisOptions> = {
    'fail-fast': { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 2000 },
    subscriber: { autoResubscribe: true, maxRetriesPerRequest: null },
    worker: { maxRetriesPerRequest: null },
  };
  const redis = new Redis(url, { ...base, ...byRole[role] });
  // One log line per outage and one per recovery, not one per reconnect attempt.
  let down = false;
  redis.on('error', (error: Error) => {
    if (down) return;
    down = true;
    logger?.warn({ connection: name, err: error.message }, 'redis connection lost; reconnecting');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    logger?.info({ connection: name }, 'redis connection restored');
  });
  return redis;
}

/** Resolves once the connection is ready, or rejects with a clear message after `timeoutMs`. */
export async function waitUntilReady(redis: Redis, url: string, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Cannot reach Redis at ${redactUrl(url)} (REDIS_URL) within ${timeoutMs} ms.`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}

export async function quitQuietly(redis: Redis): Promise<void> {
  try {
    if (redis.status === 'ready') await redis.quit();
    else redis.disconnect();
  } catch {
    redis.disconnect();
  }
}

export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/** Maps a Redis failure to the 503 a client sees; GatewayErrors pass through unchanged. */
export function asUnavailable(error: unknown, what: string): unknown {
  if (error instanceof GatewayError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new GatewayError('service_unavailable', `The gateway cannot reach its queue store (Redis) to ${what}: ${message}. Try again shortly.`, { retryAfterSeconds: 1 });
}

/** Names of every Redis key, channel and queue of one deployment. */
export class RedisNames {
  readonly queue = 'completions';
  /** BullMQ's own prefix (its keys are `<bullPrefix>:completions:*`). */
  readonly bullPrefix: string;
  /** Counters' key prefix (createRedisCounters keyPrefix). */
  readonly counters: string;
  /** Workers listen here for cancellations (a job id per message). */
  readonly cancelChannel: string;
  /** Ingresses listen here for key changes (a public key id per message). */
  readonly keyChannel: string;

  constructor(readonly prefix: string) {
    if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) throw new RangeError(`Redis prefix must be 1-64 letters, digits or _.:-, got ${JSON.stringify(prefix)}`);
    this.bullPrefix = `${prefix}:bull`;
    this.counters = `${prefix}:counters:`;
    this.cancelChannel = `${prefix}:cancel`;
    this.keyChannel = `${prefix}:keys`;
  }

  /** The channel of one ingress process: the events of every job it enqueued. */
  events(ingressId: string): string {
    return `${this.prefix}:events:${ingressId}`;
  }

  /** Set when the client of a job went away; a worker drops such a job instead of running it. */
  cancelled(jobId: string): string {
    return `${this.prefix}:job:{${jobId}}:cancelled`;
  }

  /** Set (NX) by the run of a job that emits its first token. */
  claim(jobId: string): string {
    return `${this.prefix}:job:{${jobId}}:claim`;
  }
}
