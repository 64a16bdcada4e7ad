import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../src/shared/store/store.js';
import { batchedLedgerSql, LedgerWriteBatcher } from '../src/shared/store/postgres-ledger-batch.js';
import { openPostgresStore, POSTGRES_ENCODING } from '../src/shared/store/postgres-store.js';
import { ledgerValues } from '../src/shared/store/store-records.js';
import { dropSchema } from './support/service-cleanup.js';

// The PostgreSQL store writes a turn's ledger records in one statement and falls back to one
// statement per record when that fails. The store conformance suite shows the totals come out
// right either way; this file shows the grouped statement itself works (its failure would be
// hidden by the fallback there), and that the fallback fails only the record that fails.

function entry(id: string, keyId: string, over: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    id,
    keyId,
    requestedModel: 'gpt-4o',
    servedModel: 'gpt-4o',
    attempts: [],
    promptTokens: 10,
    completionTokens: 5,
    costNanos: 1000,
    cacheReadTokens: 1,
    cacheWriteTokens: 2,
    cacheWrite1hTokens: 3,
    reasoningTokens: 4,
    status: 200,
    latencyMs: 150,
    estimated: false,
    stream: false,
    createdAt: '2026-11-22T03:00:00.000Z',
    ...over,
  };
}

describe('ledger records written together', () => {
  it('hands a turn\'s records to one write, and on its failure writes each alone, failing only the bad one', async () => {
    const many: string[][] = [];
    const one: string[] = [];
    const batcher = new LedgerWriteBatcher(
      async (entries) => {
        many.push(entries.map((e) => e.id));
        throw new Error('one record in the group is bad');
      },
      async (e) => {
        one.push(e.id);
        if (e.id === 'bad') throw new Error('bad record');
      },
    );
    const results = await Promise.allSettled(['a', 'bad', 'c'].map((id) => batcher.add(entry(id, 'k'))));
    expect(many).toEqual([['a', 'bad', 'c']]);
    expect(one.sort()).toEqual(['a', 'bad', 'c']);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });

  const databaseUrl = process.env.DATABASE_URL;
  describe.runIf(databaseUrl)('in PostgreSQL', () => {
    const schema = `sb_test_batch_${randomBytes(5).toString('hex')}`;
    afterAll(() => dropSchema(databaseUrl!, schema));

    it('charges, counts and rolls up a group in one statement, a repeated ledger id once', async () => {
      const store = await openPostgresStore(databaseUrl!, { schema });
      const client = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema}` });
      await client.connect();
      try {
        for (const id of ['key_a', 'key_b']) {
          await store.createKey({ id, name: id, publicId: `pub_${id}`, secretHash: `hash_${id}`, keyHint: 'sk-...', createdAt: '2026-11-22T01:00:00.000Z' });
        }
        const group = [
          entry('r1', 'key_a'),
          entry('r2', 'key_a', { costNanos: 2000, createdAt: '2026-11-23T03:00:00.000Z' }),
          entry('r1', 'key_a'),
          entry('r3', 'key_a', { servedModel: null, costNanos: 0 }),
          entry('r4', 'key_b', { servedModel: 'mini', costNanos: 7 }),
          entry('r5', 'key_a'),
        ];
        // The statement the store sends for a group, sent on its own: a failure here is not
        // covered up by the one-by-one fallback.
        await client.query(batchedLedgerSql(group.length), group.flatMap((e) => ledgerValues(e, POSTGRES_ENCODING)));
        expect((await store.listLedger({ limit: 10 })).map((e) => e.id).sort()).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
        expect((await store.getKey('key_a'))?.spentUsd).toBe(4000 / 1e9);
        expect((await store.getKey('key_b'))?.spentUsd).toBe(7 / 1e9);
        const split = { cache_read_tokens: 1, cache_write_tokens: 2, cache_write_1h_tokens: 3, reasoning_tokens: 4 };
        expect(await store.queryUsage({ keyId: 'key_a', groupBy: 'day' })).toEqual([
          { day: '2026-11-22', requests: 3, prompt_tokens: 30, completion_tokens: 15, cost_usd: 2000 / 1e9, ...Object.fromEntries(Object.entries(split).map(([k, v]) => [k, 3 * v])) },
          { day: '2026-11-23', requests: 1, prompt_tokens: 10, completion_tokens: 5, cost_usd: 2000 / 1e9, ...split },
        ]);
        expect(await store.queryUsage({ keyId: 'key_b', groupBy: 'model' })).toEqual([
          { model: 'mini', requests: 1, prompt_tokens: 10, completion_tokens: 5, cost_usd: 7 / 1e9, ...split },
        ]);
      } finally {
        await client.end();
        await store.close();
      }
    });
  });
});
