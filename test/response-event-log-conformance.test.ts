import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryResponseEventLog } from '../src/shared/responses/memory-response-event-log.js';
import { RedisResponseEventLog } from '../src/shared/responses/redis-response-event-log.js';
import type { LoggedEvent, ResponseEventLog } from '../src/shared/responses/response-event-log.js';

// One suite for every replay log: what a resuming client gets must not depend on the deployment.

function event(seq: number): LoggedEvent {
  return { seq, type: `response.test_${seq}`, data: JSON.stringify({ type: `response.test_${seq}`, sequence_number: seq, text: 'é✓' }) };
}

/** Follows until the end (or `until` events) and gives what arrived. */
function collect(log: ResponseEventLog, id: string, after: number): { done: Promise<LoggedEvent[]>; stop: () => void } {
  const received: LoggedEvent[] = [];
  let stop = () => {};
  const done = new Promise<LoggedEvent[]>((resolve) => {
    stop = log.follow(id, after, { onEvents: (events) => received.push(...events), onEnd: () => resolve(received) });
  });
  return { done, stop };
}

function logConformance(name: string, make: (ttlMs?: number) => ResponseEventLog): void {
  describe(name, () => {
    const logs: ResponseEventLog[] = [];
    const open = (ttlMs?: number) => {
      const log = make(ttlMs);
      logs.push(log);
      return log;
    };
    const id = () => `resp_${randomBytes(6).toString('hex')}`;
    afterAll(async () => {
      await Promise.all(logs.map((log) => log.close()));
    });

    it('replays an ended log from any point', async () => {
      const log = open();
      const responseId = id();
      await log.append(responseId, [event(0), event(1), event(2)]);
      await log.append(responseId, [event(3)]);
      await log.end(responseId);
      expect((await collect(log, responseId, -1).done).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
      const tail = await collect(log, responseId, 1).done;
      expect(tail).toEqual([event(2), event(3)]);
    });

    it('follows a live log: the backlog, then new events, then the end', async () => {
      const log = open();
      const responseId = id();
      await log.append(responseId, [event(0), event(1)]);
      const following = collect(log, responseId, 0);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await log.append(responseId, [event(2)]);
      await log.append(responseId, [event(3), event(4)]);
      await log.end(responseId);
      expect((await following.done).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    });

    it('ends at once for a log that does not exist', async () => {
      const log = open();
      expect(await collect(log, id(), -1).done).toEqual([]);
    });

    it('ignores events appended after the end', async () => {
      const log = open();
      const responseId = id();
      await log.append(responseId, [event(0)]);
      await log.end(responseId);
      await log.append(responseId, [event(1)]);
      expect((await collect(log, responseId, -1).done).map((e) => e.seq)).toEqual([0]);
    });

    it('forgets a log after its time to live', async () => {
      const log = open(300);
      const responseId = id();
      await log.append(responseId, [event(0)]);
      await log.end(responseId);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(await collect(log, responseId, -1).done).toEqual([]);
    });

    it('stops delivering once the follower stops', async () => {
      const log = open();
      const responseId = id();
      await log.append(responseId, [event(0)]);
      const received: number[] = [];
      const stop = log.follow(responseId, -1, { onEvents: (events) => received.push(...events.map((e) => e.seq)), onEnd: () => undefined });
      await new Promise((resolve) => setTimeout(resolve, 100));
      stop();
      await log.append(responseId, [event(1)]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(received).toEqual([0]);
    });
  });
}

logConformance('memory replay log', (ttlMs) => new MemoryResponseEventLog(ttlMs));

const redisUrl = process.env.REDIS_URL;
if (redisUrl) {
  const redis = new Redis(redisUrl);
  afterAll(() => redis.quit());
  logConformance('Redis replay log', (ttlMs) => new RedisResponseEventLog(redis, `sbtest-${randomBytes(4).toString('hex')}`, ttlMs));
} else {
  console.warn('response-event-log-conformance: REDIS_URL is not set; skipping the Redis replay log suite.');
  describe.skip('Redis replay log (set REDIS_URL to run)', () => {
    it('runs the conformance suite against Redis', () => {});
  });
}
