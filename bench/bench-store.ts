// What a run leaves in the shared PostgreSQL and Redis: the scaled-out stacks' schema (dropped
// before and after a run) and their Redis keys (prefixed with the run's id, deleted after it).

/** Drops the bench's schema (the scaled-out stacks migrate it afresh). */
export async function dropBenchSchema(databaseUrl: string, schema: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

export async function cleanBenchRedis(redisUrl: string, runId: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    for (let i = 0; i < 10_000; i += 1) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `sbbench-${runId}-*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
      if (cursor === '0') break;
    }
  } finally {
    redis.disconnect();
  }
}
