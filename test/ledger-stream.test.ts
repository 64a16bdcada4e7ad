import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Counters, KeyLimits } from '../src/shared/counters/counters.js';
import { LedgerStream, ledgerStreamKey } from '../src/shared/counters/ledger-stream.js';
import { createRedisCounters } from '../src/shared/counters/redis-counters.js';
import { LedgerStreamConsumer } from '../src/shared/store/ledger-stream-consumer.js';
import { openSqliteStore } from '../src/shared/store/sqlite-store.js';
import type { LedgerEntry, Store } from '../src/shared/store/store.js';

// The Redis ledger stream on its own (real Redis, real store): a settlement's record waits there
// until the store has it, the counters count waiting records when they seed a key's spend, and
// the consumer writes them to the store once, however often it runs.

const REDIS_URL = process.env.REDIS_URL;
const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);
const budget: KeyLimits = { rpm: null, tpm: null, maxConcurrent: null, budgetNanos: 1000, budgetPeriod: 'none' };

function entry(keyId: string, costNanos: number): LedgerEntry {
  return {
    id: `req-${randomBytes(6).toString('hex')}`, keyId, requestedModel: 'm', servedModel: 'm', attempts: [], promptTokens: 1, completionTokens: 1,
    costNanos, status: 200, latencyMs: 1, estimated: false, stream: false, createdAt: new Date(T0).toISOString(),
  };
}

if (!REDIS_URL) {
  describe.skip('ledger stream (set REDIS_URL to run)', () => {
    it('needs Redis', () => undefined);
  });
} else {
  describe('ledger stream', () => {
    const keyPrefix = `switchboard-test:${randomBytes(6).toString('hex')}:`;
    const dir = mkdtempSync(join(tmpdir(), 'sb-ledger-stream-'));
    let redis: Redis;
    let store: Store;
    let counters: Counters;
    let stream: LedgerStream;

    beforeAll(async () => {
      redis = new Redis(REDIS_URL);
      store = await openSqliteStore(join(dir, 'switchboard.db'));
      counters = createRedisCounters({ redis, keyPrefix, spendSource: (keyId, since) => store.spentNanosSince(keyId, since) });
      stream = new LedgerStream(redis, ledgerStreamKey(keyPrefix));
    });
    afterAll(async () => {
      await counters.close();
      await store.close();
      const keys = await redis.keys(`${keyPrefix}*`);
      if (keys.length) await redis.del(...keys);
      await redis.quit();
      rmSync(dir, { recursive: true, force: true });
    });

    it('counts records the store has not written yet when it seeds a key\'s spend, and forgets them once written', async () => {
      const keyId = `key-${randomBytes(4).toString('hex')}`;
      const admitted = await counters.admit({ keyId, requestId: 'r1', limits: budget, tokens: 1, reserveNanos: 300, now: T0 });
      if (!admitted.ok) throw new Error('not admitted');
      const record = entry(keyId, 300);
      const receipt = await counters.settle({ keyId, reservationId: admitted.reservationId, costNanos: 300, tokens: 2, budgetPeriod: 'none', now: T0, ledger: record });
      expect(receipt.streamId).toMatch(/^\d+-\d+$/);
      // The store write failed (say); spend is forgotten and seeded again: the waiting record counts.
      await counters.reset(keyId);
      expect(await counters.admit({ keyId, requestId: 'r2', limits: budget, tokens: 1, reserveNanos: 701, now: T0 })).toMatchObject({ ok: false, reason: 'budget_exceeded' });
      await store.recordUsage(record);
      await counters.forgetLedgerRecord(receipt.streamId!);
      await counters.reset(keyId);
      expect(await counters.admit({ keyId, requestId: 'r3', limits: budget, tokens: 1, reserveNanos: 700, now: T0 })).toMatchObject({ ok: true });
      expect(await counters.admit({ keyId, requestId: 'r4', limits: budget, tokens: 1, reserveNanos: 1, now: T0 })).toMatchObject({ ok: false, reason: 'budget_exceeded' });
    });

    it('has the consumer write waiting records to the store exactly once, even ones already written', async () => {
      const keyId = `key-${randomBytes(4).toString('hex')}`;
      const records = [entry(keyId, 100), entry(keyId, 200), entry(keyId, 400)];
      for (const record of records) {
        const receipt = await counters.settle({ keyId, reservationId: `gone-${record.id}`, costNanos: record.costNanos, tokens: 2, budgetPeriod: 'none', now: T0, ledger: record });
        expect(receipt.applied).toBe(true);
      }
      // The settler of the first one wrote it but died before removing it from the stream.
      await store.recordUsage(records[0]!);
      const consumer = new LedgerStreamConsumer(stream, store, pino({ level: 'silent' }), { graceMs: 0 });
      expect(await consumer.drain()).toBe(3);
      expect(await consumer.drain()).toBe(0);
      expect(await store.spentNanosSince(keyId, new Date(0).toISOString())).toBe(700);
      expect((await store.listLedger({ keyId })).map((row) => row.id).sort()).toEqual(records.map((record) => record.id).sort());
      expect(await stream.pendingBefore(Date.now() + 1000, 100)).toEqual([]);
    });
  });
}
