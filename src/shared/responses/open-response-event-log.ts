import type { Logger } from 'pino';
import type { GatewayConfig } from '../config.js';
import { openRedis, quitQuietly } from '../transport/redis-connections.js';
import { MemoryResponseEventLog } from './memory-response-event-log.js';
import { RedisResponseEventLog } from './redis-response-event-log.js';
import type { ResponseEventLog } from './response-event-log.js';

/** The replay log of the deployment: in Redis when REDIS_URL is set (any ingress can replay), else in memory. */
export function openResponseEventLog(config: GatewayConfig, redisPrefix: string, logger: Logger): { log: ResponseEventLog; close(): Promise<void> } {
  if (!config.redisUrl) {
    const log = new MemoryResponseEventLog();
    return { log, close: () => log.close() };
  }
  const redis = openRedis(config.redisUrl, 'worker', 'sb:ingress:response-events', logger);
  const log = new RedisResponseEventLog(redis, redisPrefix);
  return {
    log,
    async close() {
      await log.close();
      await quitQuietly(redis);
    },
  };
}
