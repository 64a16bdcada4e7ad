import { dropSchema, removeRedisPrefix } from '../test/support/service-cleanup.js';

// What a run leaves in the shared PostgreSQL and Redis: the scaled-out stacks' schema (dropped
// before and after a run) and their Redis keys (prefixed with the run's id, deleted after it).

/** Drops the bench's schema (the scaled-out stacks migrate it afresh). */
export function dropBenchSchema(databaseUrl: string, schema: string): Promise<void> {
  return dropSchema(databaseUrl, schema);
}

export function cleanBenchRedis(redisUrl: string, runId: string): Promise<void> {
  return removeRedisPrefix(redisUrl, `sbbench-${runId}-`);
}
