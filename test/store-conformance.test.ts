import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LedgerEntry, NewKey, Store, StoredResponse, UsageFilter, UsageRow } from '../src/shared/store/store.js';
import { openSqliteStore } from '../src/shared/store/sqlite-store.js';
import { openPostgresStore } from '../src/shared/store/postgres-store.js';
import { accessStoreConformance } from './support/access-store-conformance.js';

// One suite, run against every Store implementation, so the embedded and scaled-out stores
// cannot drift apart. Each test gets its own empty database (file or schema).

interface StoreTarget {
  /** A new, empty database; every store `open` returns shares it; `raw` runs SQL on it directly. */
  fresh(): { open: () => Promise<Store>; raw: (sql: string) => Promise<void> };
  /** Removes every database `fresh` made. */
  dispose(): Promise<void>;
}

function sqliteTarget(): StoreTarget {
  const root = mkdtempSync(join(tmpdir(), 'sb-store-'));
  let n = 0;
  return {
    fresh() {
      // A nested, missing folder: opening must create it.
      const file = join(root, `db-${n++}`, 'nested', 'switchboard.db');
      return {
        open: () => openSqliteStore(file),
        async raw(sql) {
          const db = new Database(file);
          try {
            db.exec(sql);
          } finally {
            db.close();
          }
        },
      };
    },
    async dispose() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function postgresTarget(url: string): StoreTarget {
  const schemas: string[] = [];
  return {
    fresh() {
      const schema = `sb_test_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      return {
        open: () => openPostgresStore(url, { schema }),
        async raw(sql) {
          const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
          await client.connect();
          try {
            await client.query(sql);
          } finally {
            await client.end();
          }
        },
      };
    },
    async dispose() {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

let seq = 0;
function newKey(over: Partial<NewKey> = {}): NewKey {
  const n = ++seq;
  return {
    id: `key_${n}`,
    name: `Key ${n}`,
    publicId: `pub_${n}`,
    secretHash: `hash_${n}`,
    keyHint: `sk-...${n}`,
    createdAt: '2026-11-22T03:00:00.000Z',
    ...over,
  };
}

/** Usage rows of records without cache or reasoning tokens. */
const noSplit = { cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0 };

function entry(over: Partial<LedgerEntry> & Pick<LedgerEntry, 'id' | 'keyId'>): LedgerEntry {
  return {
    requestedModel: 'gpt-4o',
    servedModel: 'gpt-4o',
    attempts: [{ model: 'gpt-4o', provider: 'openai', outcome: 'success', status: 200, latencyMs: 120 }],
    promptTokens: 10,
    completionTokens: 5,
    costNanos: 1000,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    reasoningTokens: 0,
    status: 200,
    latencyMs: 150,
    estimated: false,
    stream: false,
    createdAt: '2026-11-22T03:00:00.000Z',
    ...over,
  };
}

function storedResponse(over: Partial<StoredResponse> & Pick<StoredResponse, 'id' | 'keyId'>): StoredResponse {
  return {
    status: 'completed',
    background: false,
    response: { id: over.id, object: 'response', status: over.status ?? 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'hé ✓' }] }] },
    inputItems: [{ type: 'message', role: 'user', content: 'hi' }],
    contextItems: [],
    createdAt: '2026-11-22T03:00:00.000Z',
    expiresAt: '2026-12-22T03:00:00.000Z',
    ...over,
  };
}

function storeConformance(name: string, makeTarget: () => StoreTarget): void {
  describe(name, () => {
    const target = makeTarget();
    const opened: Store[] = [];
    const open = async (db = target.fresh()) => {
      const store = await db.open();
      opened.push(store);
      return store;
    };

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
    });
    afterAll(() => target.dispose());

    it('creates and reads keys by id, public id and in a list', async () => {
      const store = await open();
      const a = await store.createKey(newKey({ budgetUsd: 12.5, budgetPeriod: 'monthly', rpm: 60, tpm: 1000, maxConcurrent: 3 }));
      const b = await store.createKey(newKey({ createdAt: '2026-11-22T04:00:00.000Z' }));
      expect(a).toMatchObject({ budgetUsd: 12.5, budgetPeriod: 'monthly', rpm: 60, tpm: 1000, maxConcurrent: 3 });
      expect(a).toMatchObject({ spentUsd: 0, revokedAt: null, lastUsedAt: null, createdAt: '2026-11-22T03:00:00.000Z' });
      expect(b).toMatchObject({ budgetUsd: null, budgetPeriod: 'none', rpm: null, tpm: null, maxConcurrent: null });
      expect(await store.getKey(a.id)).toEqual(a);
      expect(await store.getKeyByPublicId(b.publicId)).toEqual(b);
      expect(await store.getKey('missing')).toBeNull();
      expect(await store.getKeyByPublicId('missing')).toBeNull();
      expect(await store.listKeys()).toEqual([a, b]);
    });

    it('rejects a duplicate public id', async () => {
      const store = await open();
      await store.createKey(newKey({ publicId: 'same' }));
      await expect(store.createKey(newKey({ publicId: 'same' }))).rejects.toThrow();
    });

    it('stores times as ISO 8601 UTC whatever offset they arrive with', async () => {
      const store = await open();
      const key = await store.createKey(newKey({ createdAt: '2026-11-22T05:00:00+02:00' }));
      expect(key.createdAt).toBe('2026-11-22T03:00:00.000Z');
    });

    it('updates only the fields in the patch, null clears', async () => {
      const store = await open();
      const key = await store.createKey(newKey({ budgetUsd: 5, rpm: 10, tpm: 100, maxConcurrent: 2 }));
      const updated = await store.updateKey(key.id, { name: 'renamed', rpm: null, budgetPeriod: 'daily' });
      expect(updated).toEqual({ ...key, name: 'renamed', rpm: null, budgetPeriod: 'daily' });
      expect(await store.getKey(key.id)).toEqual(updated);
      expect(await store.updateKey(key.id, {})).toEqual(updated);
      expect(await store.updateKey(key.id, { budgetUsd: null, tpm: 7, maxConcurrent: null })).toMatchObject({
        budgetUsd: null,
        tpm: 7,
        maxConcurrent: null,
        name: 'renamed',
      });
      expect(await store.updateKey('missing', { name: 'x' })).toBeNull();
    });

    it('revokes, keeping the first revocation time', async () => {
      const store = await open();
      const key = await store.createKey(newKey());
      const first = await store.revokeKey(key.id, '2026-11-23T00:00:00.000Z');
      expect(first).toEqual({ ...key, revokedAt: '2026-11-23T00:00:00.000Z' });
      const second = await store.revokeKey(key.id, '2026-11-24T00:00:00.000Z');
      expect(second?.revokedAt).toBe('2026-11-23T00:00:00.000Z');
      expect(await store.revokeKey('missing', '2026-11-24T00:00:00.000Z')).toBeNull();
    });

    it('records usage: ledger row, spend and last use together', async () => {
      const store = await open();
      const key = await store.createKey(newKey());
      // The cache and reasoning split (migration 5) is kept in its own columns.
      const e = entry({ id: 'req_1', keyId: key.id, costNanos: 2_500_000_000, estimated: true, stream: true, servedModel: 'fallback', cacheReadTokens: 4, cacheWriteTokens: 3, cacheWrite1hTokens: 1, reasoningTokens: 2 });
      await store.recordUsage(e);
      expect(await store.getKey(key.id)).toMatchObject({ spentUsd: 2.5, lastUsedAt: e.createdAt });
      expect(await store.listLedger({})).toEqual([e]);
      // An older, late-arriving record adds spend but does not move last use backwards.
      await store.recordUsage(entry({ id: 'req_0', keyId: key.id, costNanos: 1, createdAt: '2026-11-22T02:00:00.000Z' }));
      expect(await store.getKey(key.id)).toMatchObject({ spentUsd: 2.500000001, lastUsedAt: e.createdAt });
    });

    it('does not charge a duplicate ledger id twice', async () => {
      const store = await open();
      const key = await store.createKey(newKey());
      const e = entry({ id: 'req_dup', keyId: key.id, costNanos: 7_000 });
      await store.recordUsage(e);
      await store.recordUsage({ ...e, costNanos: 9_000 });
      await Promise.all([store.recordUsage(e), store.recordUsage(e)]);
      expect((await store.getKey(key.id))?.spentUsd).toBe(7_000 / 1e9);
      expect(await store.listLedger({ keyId: key.id })).toEqual([e]);
      expect(await store.queryUsage({ keyId: key.id })).toEqual([{ requests: 1, prompt_tokens: 10, completion_tokens: 5, cost_usd: 7_000 / 1e9, ...noSplit }]);
    });

    it('keeps spend exact under concurrent records for one key', async () => {
      const store = await open();
      const key = await store.createKey(newKey());
      await Promise.all(Array.from({ length: 40 }, (_, i) => store.recordUsage(entry({ id: `c_${i}`, keyId: key.id, costNanos: 333_333_337 }))));
      expect(await store.spentNanosSince(key.id, '2000-01-01T00:00:00.000Z')).toBe(40 * 333_333_337);
      expect((await store.getKey(key.id))?.spentUsd).toBe((40 * 333_333_337) / 1e9);
      expect(await store.queryUsage({ keyId: key.id, groupBy: 'day' })).toEqual([
        { day: '2026-11-22', requests: 40, prompt_tokens: 400, completion_tokens: 200, cost_usd: (40 * 333_333_337) / 1e9, ...noSplit },
      ]);
    });

    it('sums odd nano values exactly', async () => {
      const store = await open();
      const key = await store.createKey(newKey());
      for (let i = 0; i < 3; i++) await store.recordUsage(entry({ id: `third_${i}`, keyId: key.id, costNanos: 3_333_333 }));
      await store.recordUsage(entry({ id: 'big', keyId: key.id, costNanos: 1_234_567_890_123 }));
      const total = 3 * 3_333_333 + 1_234_567_890_123;
      expect(await store.spentNanosSince(key.id, '2026-01-01T00:00:00.000Z')).toBe(total);
      expect((await store.getKey(key.id))?.spentUsd).toBe(total / 1e9);
      expect(await store.queryUsage({ keyId: key.id })).toEqual([
        { requests: 4, prompt_tokens: 40, completion_tokens: 20, cost_usd: total / 1e9, ...noSplit },
      ]);
      await expect(store.recordUsage(entry({ id: 'frac', keyId: key.id, costNanos: 1.5 }))).rejects.toThrow(RangeError);
    });

    it('sums spend since a time, inclusive, per key', async () => {
      const store = await open();
      const key = await store.createKey(newKey());
      const other = await store.createKey(newKey());
      await store.recordUsage(entry({ id: 'a', keyId: key.id, costNanos: 1, createdAt: '2026-11-21T23:59:59.999Z' }));
      await store.recordUsage(entry({ id: 'b', keyId: key.id, costNanos: 20, createdAt: '2026-11-22T00:00:00.000Z' }));
      await store.recordUsage(entry({ id: 'c', keyId: key.id, costNanos: 300, createdAt: '2026-11-25T00:00:00.000Z' }));
      await store.recordUsage(entry({ id: 'd', keyId: other.id, costNanos: 4000, createdAt: '2026-11-25T00:00:00.000Z' }));
      expect(await store.spentNanosSince(key.id, '2026-11-22T00:00:00.000Z')).toBe(320);
      expect(await store.spentNanosSince(key.id, '2026-11-26T00:00:00.000Z')).toBe(0);
      // Mid-day starts read the partial day from the ledger, the rest from the daily rollup.
      expect(await store.spentNanosSince(key.id, '2026-11-21T23:59:59.999Z')).toBe(321);
      expect(await store.spentNanosSince(key.id, '2026-11-22T02:00:00.001+02:00')).toBe(300);
      expect(await store.spentNanosSince(key.id, '2026-11-25T00:00:00.001Z')).toBe(0);
      expect(await store.spentNanosSince('missing', '2000-01-01T00:00:00.000Z')).toBe(0);
    });

    describe('usage queries', () => {
      // Two keys, two served models, three UTC days; one request had no model serve it.
      async function seeded(): Promise<Store> {
        const store = await open();
        const rows: [string, string, string | null, number, string][] = [
          ['u1', 'k_a', 'm_x', 100, '2026-11-20T23:59:59.999Z'],
          ['u2', 'k_a', 'm_y', 200, '2026-11-21T00:00:00.000Z'],
          ['u3', 'k_b', 'm_x', 400, '2026-11-21T12:00:00.000Z'],
          ['u4', 'k_b', 'm_x', 800, '2026-11-22T00:00:00.000Z'],
          ['u5', 'k_a', null, 0, '2026-11-22T01:00:00.000Z'],
        ];
        for (const [id, keyId, servedModel, costNanos, createdAt] of rows) {
          await store.recordUsage(entry({ id, keyId, servedModel, costNanos, createdAt, status: servedModel ? 200 : 502 }));
        }
        return store;
      }
      const usage = (requests: number, costNanos: number) => ({
        requests,
        prompt_tokens: 10 * requests,
        completion_tokens: 5 * requests,
        cost_usd: costNanos / 1e9,
        ...noSplit,
      });

      it('returns one total row without groupBy, zeros when empty', async () => {
        const store = await seeded();
        expect(await store.queryUsage({})).toEqual([usage(5, 1500)]);
        expect(await store.queryUsage({ keyId: 'nobody' })).toEqual([usage(0, 0)]);
      });

      it('groups by key', async () => {
        const store = await seeded();
        expect(await store.queryUsage({ groupBy: 'key' })).toEqual([
          { key_id: 'k_a', ...usage(3, 300) },
          { key_id: 'k_b', ...usage(2, 1200) },
        ]);
      });

      it('groups by served model, unserved requests last without a model', async () => {
        const store = await seeded();
        expect(await store.queryUsage({ groupBy: 'model' })).toEqual([
          { model: 'm_x', ...usage(3, 1300) },
          { model: 'm_y', ...usage(1, 200) },
          usage(1, 0),
        ]);
        expect(await store.queryUsage({ groupBy: 'model', keyId: 'k_a' })).toEqual([
          { model: 'm_x', ...usage(1, 100) },
          { model: 'm_y', ...usage(1, 200) },
          usage(1, 0),
        ]);
      });

      it('groups by UTC day', async () => {
        const store = await seeded();
        expect(await store.queryUsage({ groupBy: 'day' })).toEqual([
          { day: '2026-11-20', ...usage(1, 100) },
          { day: '2026-11-21', ...usage(2, 600) },
          { day: '2026-11-22', ...usage(2, 800) },
        ]);
      });

      it('filters by model, since (inclusive) and until (exclusive)', async () => {
        const store = await seeded();
        expect(await store.queryUsage({ model: 'm_x' })).toEqual([usage(3, 1300)]);
        const window = { since: '2026-11-21T00:00:00.000Z', until: '2026-11-22T00:00:00.000Z' };
        expect(await store.queryUsage({ ...window, groupBy: 'key' })).toEqual([
          { key_id: 'k_a', ...usage(1, 200) },
          { key_id: 'k_b', ...usage(1, 400) },
        ]);
        expect(await store.queryUsage({ ...window, model: 'm_x', keyId: 'k_b', groupBy: 'day' })).toEqual([
          { day: '2026-11-21', ...usage(1, 400) },
        ]);
      });

      it('lists the ledger newest first, filtered and limited', async () => {
        const store = await seeded();
        const ids = async (f: Parameters<Store['listLedger']>[0]) => (await store.listLedger(f)).map((e) => e.id);
        expect(await ids({})).toEqual(['u5', 'u4', 'u3', 'u2', 'u1']);
        expect(await ids({ limit: 2 })).toEqual(['u5', 'u4']);
        expect(await ids({ keyId: 'k_a' })).toEqual(['u5', 'u2', 'u1']);
        expect(await ids({ model: 'm_x' })).toEqual(['u4', 'u3', 'u1']);
        expect(await ids({ since: '2026-11-21T00:00:00.000Z', until: '2026-11-22T00:00:00.000Z' })).toEqual(['u3', 'u2']);
        const [unserved] = await store.listLedger({ limit: 1 });
        expect(unserved).toMatchObject({ servedModel: null, status: 502, estimated: false, stream: false });
      });

      it('limits the ledger to 100 rows by default', async () => {
        const store = await open();
        for (let i = 0; i < 105; i++) {
          const createdAt = new Date(Date.UTC(2026, 10, 22, 0, 0, i)).toISOString();
          await store.recordUsage(entry({ id: `l_${String(i).padStart(3, '0')}`, keyId: 'k', createdAt }));
        }
        const list = await store.listLedger({});
        expect(list).toHaveLength(100);
        expect(list[0].id).toBe('l_104');
        expect(list[99].id).toBe('l_005');
      });
    });

    describe('usage rollups', () => {
      // Rows at awkward times over five UTC days, for several keys and models (and unserved ones).
      const models = ['m_a', 'm_b', null] as const;
      const rows: LedgerEntry[] = Array.from({ length: 60 }, (_, i) =>
        entry({
          id: `r_${i}`,
          keyId: `k_${i % 3}`,
          servedModel: models[i % models.length === 2 && i % 4 !== 2 ? 0 : i % models.length] ?? null,
          promptTokens: 7 + i,
          completionTokens: 3 * i,
          costNanos: 1_000_003 * (i + 1),
          // From 2026-11-20T22:00Z in steps of 1 h 59 min 59.999 s, so rows fall at and around midnight.
          createdAt: new Date(Date.UTC(2026, 10, 20, 22) + i * (2 * 3_600_000 - 1)).toISOString(),
        }),
      );

      function expected(filter: UsageFilter): UsageRow[] {
        const match = rows.filter(
          (r) =>
            (filter.keyId === undefined || r.keyId === filter.keyId) &&
            (filter.model === undefined || r.servedModel === filter.model) &&
            (filter.since === undefined || Date.parse(r.createdAt) >= Date.parse(filter.since)) &&
            (filter.until === undefined || Date.parse(r.createdAt) < Date.parse(filter.until)),
        );
        const groupOf = (r: LedgerEntry): string | null =>
          filter.groupBy === 'key' ? r.keyId : filter.groupBy === 'model' ? r.servedModel : filter.groupBy === 'day' ? r.createdAt.slice(0, 10) : null;
        const groups = new Map<string | null, { requests: number; prompt_tokens: number; completion_tokens: number; nanos: number }>();
        if (!filter.groupBy) groups.set(null, { requests: 0, prompt_tokens: 0, completion_tokens: 0, nanos: 0 });
        for (const r of match) {
          const g = groups.get(groupOf(r)) ?? { requests: 0, prompt_tokens: 0, completion_tokens: 0, nanos: 0 };
          g.requests += 1;
          g.prompt_tokens += r.promptTokens;
          g.completion_tokens += r.completionTokens;
          g.nanos += r.costNanos;
          groups.set(groupOf(r), g);
        }
        const field = filter.groupBy === 'key' ? 'key_id' : filter.groupBy === 'model' ? 'model' : 'day';
        return [...groups.entries()]
          .sort(([a], [b]) => (a === null ? 1 : b === null ? -1 : a < b ? -1 : a > b ? 1 : 0))
          .map(([g, t]) => ({
            ...(filter.groupBy && g !== null ? { [field]: g } : {}),
            requests: t.requests,
            prompt_tokens: t.prompt_tokens,
            completion_tokens: t.completion_tokens,
            cost_usd: t.nanos / 1e9,
            ...noSplit,
          }));
      }

      const times = [
        undefined,
        '2026-11-20T00:00:00.000Z',
        '2026-11-21T00:00:00.000Z',
        '2026-11-21T00:00:00.001Z',
        '2026-11-21T23:59:59.999Z',
        '2026-11-22T13:37:00.000+02:00',
        '2026-11-23T00:00:00.000Z',
        '2026-11-25T05:00:00.000Z',
        '2026-12-01T00:00:00.000Z',
      ];
      const filters: UsageFilter[] = [];
      for (const since of times) for (const until of times) filters.push({ since, until });

      async function checkAll(store: Store): Promise<void> {
        for (const range of filters) {
          for (const groupBy of [undefined, 'key', 'model', 'day'] as const) {
            const f = { ...range, groupBy };
            expect(await store.queryUsage(f), JSON.stringify(f)).toEqual(expected(f));
          }
          for (const narrow of [{ keyId: 'k_1' }, { model: 'm_b' }, { keyId: 'k_2', model: 'm_a', groupBy: 'day' as const }, { model: '' }]) {
            const f = { ...range, ...narrow };
            expect(await store.queryUsage(f), JSON.stringify(f)).toEqual(expected(f));
          }
          if (range.since !== undefined) expect(await store.spentNanosSince('k_0', range.since)).toBe(Math.round(expected({ keyId: 'k_0', since: range.since })[0]!.cost_usd * 1e9));
        }
      }

      it('answer every range, filter and grouping exactly as the ledger would', async () => {
        const store = await open();
        for (const r of rows) await store.recordUsage(r);
        await checkAll(store);
      });

      it("are the same when a turn's records for many keys, days and models arrive at once", async () => {
        const store = await open();
        // One event-loop turn: the stores write these together (one transaction or statement).
        await Promise.all([...rows, ...rows.slice(0, 5)].map((r) => store.recordUsage(r)));
        await checkAll(store);
        expect((await store.listLedger({ limit: 1000 })).length).toBe(rows.length);
      });

      it('are rebuilt from the ledger, and backfilled when a ledger predates them', async () => {
        const db = target.fresh();
        const store = await open(db);
        for (const r of rows) await store.recordUsage(r);
        await store.rebuildUsageRollups();
        await checkAll(store);
        // The state of a database written before the rollup existed (and so before the cache and
        // reasoning split of migration 5): migration 2 fills the rollup in, migration 5 adds the split.
        const dropSplit = ['cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens'].map((column) => `ALTER TABLE usage_ledger DROP COLUMN ${column};`).join(' ');
        await db.raw(`DROP TABLE usage_daily; ${dropSplit} DELETE FROM schema_migrations WHERE version IN (2, 5)`);
        const reopened = await open(db);
        await checkAll(reopened);
      });
    });

    describe('dashboard sign-outs', () => {
      it('keeps a signed-out session ended for every store on the database, until its expiry sweeps it', async () => {
        const db = target.fresh();
        const store = await open(db);
        const later = new Date(Date.now() + 3600_000).toISOString();
        expect(await store.isDashboardSessionEnded('session-a')).toBe(false);
        await store.endDashboardSession('session-a', later);
        await store.endDashboardSession('session-a', later); // a second sign-out of the same cookie is harmless
        expect(await store.isDashboardSessionEnded('session-a')).toBe(true);
        expect(await store.isDashboardSessionEnded('session-b')).toBe(false);
        // Another process on the same database (or this one, restarted) sees it too.
        const other = await open(db);
        expect(await other.isDashboardSessionEnded('session-a')).toBe(true);

        // Rows of sessions that have expired anyway are swept at the next sign-out.
        await other.endDashboardSession('session-old', new Date(Date.now() - 1000).toISOString());
        await other.endDashboardSession('session-c', later);
        expect(await other.isDashboardSessionEnded('session-old')).toBe(false);
        expect(await other.isDashboardSessionEnded('session-c')).toBe(true);
        expect(await other.isDashboardSessionEnded('session-a')).toBe(true);
      });
    });

    describe('stored responses', () => {
      const now = '2026-11-23T00:00:00.000Z';

      it('keeps a response per key and gives it back unchanged', async () => {
        const store = await open();
        const record = storedResponse({ id: 'resp_a', keyId: 'key_a', background: true, contextItems: [{ type: 'function_call', call_id: 'c1' }] });
        expect(await store.saveResponse(record)).toBe(true);
        expect(await store.getResponse('resp_a', 'key_a', now)).toEqual(record);
        expect(await store.getResponse('resp_a', 'key_b', now)).toBeNull();
        expect(await store.getResponse('resp_missing', 'key_a', now)).toBeNull();
      });

      it('replaces a response of the same key, never another key\'s', async () => {
        const store = await open();
        await store.saveResponse(storedResponse({ id: 'resp_b', keyId: 'key_a', status: 'queued' }));
        expect(await store.saveResponse(storedResponse({ id: 'resp_b', keyId: 'key_b', status: 'completed' }))).toBe(false);
        expect((await store.getResponse('resp_b', 'key_a', now))?.status).toBe('queued');
        expect(await store.saveResponse(storedResponse({ id: 'resp_b', keyId: 'key_a', status: 'in_progress' }))).toBe(true);
        expect((await store.getResponse('resp_b', 'key_a', now))?.status).toBe('in_progress');
      });

      it('does not overwrite a finished response when asked to write only unfinished ones', async () => {
        const store = await open();
        await store.saveResponse(storedResponse({ id: 'resp_c', keyId: 'key_a', status: 'cancelled' }));
        expect(await store.saveResponse(storedResponse({ id: 'resp_c', keyId: 'key_a', status: 'completed' }), { onlyIfUnfinished: true })).toBe(false);
        expect((await store.getResponse('resp_c', 'key_a', now))?.status).toBe('cancelled');
        await store.saveResponse(storedResponse({ id: 'resp_d', keyId: 'key_a', status: 'in_progress' }));
        expect(await store.saveResponse(storedResponse({ id: 'resp_d', keyId: 'key_a', status: 'completed' }), { onlyIfUnfinished: true })).toBe(true);
        expect((await store.getResponse('resp_d', 'key_a', now))?.status).toBe('completed');
      });

      it('deletes only the owner\'s response', async () => {
        const store = await open();
        await store.saveResponse(storedResponse({ id: 'resp_e', keyId: 'key_a' }));
        expect(await store.deleteResponse('resp_e', 'key_b')).toBe(false);
        expect(await store.deleteResponse('resp_e', 'key_a')).toBe(true);
        expect(await store.getResponse('resp_e', 'key_a', now)).toBeNull();
        expect(await store.deleteResponse('resp_e', 'key_a')).toBe(false);
      });

      it('hides expired responses and purges them, keeping the others', async () => {
        const store = await open();
        await store.saveResponse(storedResponse({ id: 'resp_old', keyId: 'key_a', expiresAt: '2026-11-22T12:00:00.000Z' }));
        await store.saveResponse(storedResponse({ id: 'resp_new', keyId: 'key_a', expiresAt: '2026-11-24T12:00:00.000Z' }));
        expect(await store.getResponse('resp_old', 'key_a', now)).toBeNull();
        expect(await store.purgeResponses(now)).toBe(1);
        expect(await store.getResponse('resp_old', 'key_a', '2026-11-22T00:00:00.000Z')).toBeNull();
        expect((await store.getResponse('resp_new', 'key_a', now))?.id).toBe('resp_new');
      });
    });

    describe('governance (migration 6)', () => {
      it('keeps allowed models, expiry, project and alerts on keys, patchable and clearable', async () => {
        const store = await open();
        const key = await store.createKey(newKey({ allowedModels: ['svc/alpha', 'svc/claude-*'], expiresAt: '2027-01-01T01:00:00+01:00', projectId: 'proj_1', alerts: [{ thresholdPercent: 50, webhookUrl: 'http://127.0.0.1:1/hook' }] }));
        expect(key).toMatchObject({ allowedModels: ['svc/alpha', 'svc/claude-*'], expiresAt: '2027-01-01T00:00:00.000Z', projectId: 'proj_1', alerts: [{ thresholdPercent: 50, webhookUrl: 'http://127.0.0.1:1/hook' }] });
        const plain = await store.createKey(newKey());
        expect(plain).toMatchObject({ allowedModels: null, expiresAt: null, projectId: null, alerts: [] });
        const patched = await store.updateKey(key.id, { allowedModels: null, expiresAt: null, projectId: null, alerts: [] });
        expect(patched).toMatchObject({ allowedModels: null, expiresAt: null, projectId: null, alerts: [], name: key.name });
      });

      it('creates, lists, patches and deletes projects, detaching their keys', async () => {
        const store = await open();
        const project = await store.createProject({ id: 'proj_a', name: 'A', budgetUsd: 2.5, budgetPeriod: 'daily', rpm: 10, tpm: null, alerts: [], createdAt: '2026-11-22T03:00:00.000Z' });
        expect(await store.getProject('proj_a')).toEqual(project);
        expect(await store.listProjects()).toEqual([project]);
        const patched = await store.updateProject('proj_a', { budgetUsd: null, tpm: 100, alerts: [{ thresholdPercent: 80, webhookUrl: 'http://x.test/' }] });
        expect(patched).toMatchObject({ name: 'A', budgetUsd: null, tpm: 100, rpm: 10, alerts: [{ thresholdPercent: 80, webhookUrl: 'http://x.test/' }] });
        const key = await store.createKey(newKey({ projectId: 'proj_a' }));
        expect(await store.deleteProject('proj_a')).toBe(true);
        expect(await store.deleteProject('proj_a')).toBe(false);
        expect((await store.getKey(key.id))?.projectId).toBeNull();
      });

      it("sums a project's spend over its keys since a time", async () => {
        const store = await open();
        await store.createProject({ id: 'proj_s', name: 'S', budgetUsd: 1, budgetPeriod: 'none', rpm: null, tpm: null, alerts: [], createdAt: '2026-11-22T03:00:00.000Z' });
        const a = await store.createKey(newKey({ projectId: 'proj_s' }));
        const b = await store.createKey(newKey({ projectId: 'proj_s' }));
        const outside = await store.createKey(newKey());
        await store.recordUsage(entry({ id: 'g1', keyId: a.id, costNanos: 7 }));
        await store.recordUsage(entry({ id: 'g2', keyId: b.id, costNanos: 11, createdAt: '2026-11-23T00:00:00.000Z' }));
        await store.recordUsage(entry({ id: 'g3', keyId: outside.id, costNanos: 1000 }));
        expect(await store.projectSpentNanosSince('proj_s', '1970-01-01T00:00:00.000Z')).toBe(18);
        expect(await store.projectSpentNanosSince('proj_s', '2026-11-23T00:00:00.000Z')).toBe(11);
      });

      it('claims an alert delivery once per subject, threshold, webhook and period', async () => {
        const store = await open();
        const delivery = { id: 'alert_1', subjectKind: 'key' as const, subjectId: 'key_x', thresholdPercent: 50, webhookUrl: 'http://h.test/', periodStart: '2026-11-22T00:00:00.000Z', status: 'pending', attempts: 0, lastStatus: null, lastError: null, createdAt: '2026-11-22T03:00:00.000Z', deliveredAt: null };
        expect(await store.claimAlertDelivery(delivery)).toBe(true);
        expect(await store.claimAlertDelivery({ ...delivery, id: 'alert_2' })).toBe(false);
        expect(await store.claimAlertDelivery({ ...delivery, id: 'alert_3', periodStart: '2026-11-23T00:00:00.000Z' })).toBe(true);
        await store.updateAlertDelivery('alert_1', { status: 'delivered', attempts: 2, lastStatus: 200, lastError: null, deliveredAt: '2026-11-22T03:00:01.000Z' });
        const listed = await store.listAlertDeliveries({ subjectId: 'key_x' });
        expect(listed.map((d) => d.id).sort()).toEqual(['alert_1', 'alert_3']);
        expect(listed.find((d) => d.id === 'alert_1')).toMatchObject({ status: 'delivered', attempts: 2, lastStatus: 200, deliveredAt: '2026-11-22T03:00:01.000Z' });
      });

      it('adds refused counts and sums them per key, model and status', async () => {
        const store = await open();
        await store.addRefusedCounts([{ day: '2026-11-21', keyId: 'k1', model: 'svc/a', status: 429, count: 2 }, { day: '2026-11-22', keyId: 'k1', model: 'svc/a', status: 429, count: 3 }]);
        await store.addRefusedCounts([{ day: '2026-11-22', keyId: 'k1', model: 'svc/a', status: 429, count: 4 }, { day: '2026-11-22', keyId: 'k2', model: '', status: 401, count: 1 }]);
        expect(await store.queryRefusedCounts({})).toEqual([{ keyId: 'k1', model: 'svc/a', status: 429, count: 9 }, { keyId: 'k2', model: '', status: 401, count: 1 }]);
        expect(await store.queryRefusedCounts({ keyId: 'k1', since: '2026-11-22T00:00:00.000Z' })).toEqual([{ keyId: 'k1', model: 'svc/a', status: 429, count: 7 }]);
      });

      it('imports keys, projects and ledger records idempotently', async () => {
        const source = await open();
        const key = await source.createKey(newKey({ allowedModels: ['svc/*'], projectId: 'proj_i' }));
        await source.recordUsage(entry({ id: 'imp1', keyId: key.id, costNanos: 123 }));
        await source.revokeKey(key.id, '2026-11-22T05:00:00.000Z');
        const project = await source.createProject({ id: 'proj_i', name: 'I', budgetUsd: null, budgetPeriod: 'none', rpm: null, tpm: null, alerts: [], createdAt: '2026-11-22T03:00:00.000Z' });
        const [record] = await source.listKeys();
        const ledger = await source.listLedger({});
        const target = await open();
        for (let round = 0; round < 2; round++) {
          await target.importProject(project);
          await target.importKey(record!);
          expect(await target.importLedger(ledger)).toBe(round === 0 ? 1 : 0);
          await target.rebuildUsageRollups();
        }
        expect(await target.listKeys()).toEqual([record]);
        expect(await target.listProjects()).toEqual([project]);
        expect(await target.listLedger({})).toEqual(ledger);
        expect(await target.queryUsage({ keyId: key.id })).toEqual(await source.queryUsage({ keyId: key.id }));
      });
    });

    accessStoreConformance(async () => {
      const db = target.fresh();
      return { store: await open(db), raw: db.raw };
    });

    describe('migrations', () => {
      it('run again on an open store and on reopening, keeping data', async () => {
        const db = target.fresh();
        const first = await open(db);
        const key = await first.createKey(newKey());
        await first.migrate();
        await first.migrate();
        const second = await open(db);
        expect(await second.getKey(key.id)).toEqual(key);
      });

      it('run concurrently when several stores open the same database at once', async () => {
        const db = target.fresh();
        const stores = await Promise.all([open(db), open(db), open(db), open(db)]);
        const key = await stores[0].createKey(newKey());
        await Promise.all(stores.map((s) => s.migrate()));
        for (const s of stores) expect(await s.getKey(key.id)).toEqual(key);
      });
    });
  });
}

storeConformance('SQLite store', sqliteTarget);

const databaseUrl = process.env.DATABASE_URL;
if (databaseUrl) {
  storeConformance('PostgreSQL store', () => postgresTarget(databaseUrl));
} else {
  console.warn('store-conformance: DATABASE_URL is not set; skipping the PostgreSQL store suite.');
  describe.skip('PostgreSQL store (set DATABASE_URL to run)', () => {
    it('runs the conformance suite against PostgreSQL', () => {});
  });
}
