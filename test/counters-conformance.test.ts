import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admission, AdmissionInput, Counters, KeyLimits, SpendSource } from '../src/shared/counters/counters.js';
import { createMemoryCounters } from '../src/shared/counters/memory-counters.js';
import { periodEnd, periodStart } from '../src/shared/counters/period.js';
import { createRedisCounters } from '../src/shared/counters/redis-counters.js';
import type { LedgerEntry } from '../src/shared/store/store.js';

// One behaviour for every Counters implementation. A backend hands out two instances that share
// state, standing in for two ingress processes: for Redis two connections, for memory the same
// object (one process is all the embedded default has).

interface Pair {
  a: Counters;
  b: Counters;
}
type Make = (opts: { spendSource: SpendSource; projectSpendSource?: SpendSource; reservationTtlMs?: number }) => Pair;
interface Backend {
  make: Make;
  close(): Promise<void>;
}

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0); // a Wednesday, noon UTC
const zero: SpendSource = async () => 0;

function limits(l: Partial<KeyLimits>): KeyLimits {
  return { rpm: null, tpm: null, maxConcurrent: null, budgetNanos: null, budgetPeriod: 'none', ...l };
}
const newKey = () => `key-${randomBytes(6).toString('hex')}`;
function ledgerEntry(keyId: string, costNanos: number): LedgerEntry {
  return {
    id: `req-${randomBytes(6).toString('hex')}`, keyId, requestedModel: 'm', servedModel: 'm', attempts: [], promptTokens: 1, completionTokens: 1,
    costNanos, status: 200, latencyMs: 1, estimated: false, stream: false, createdAt: new Date(T0).toISOString(),
  };
}
let seq = 0;
function req(keyId: string, l: KeyLimits, o: { tokens?: number; reserve?: number; now?: number } = {}): AdmissionInput {
  return { keyId, requestId: `req-${++seq}`, limits: l, tokens: o.tokens ?? 10, reserveNanos: o.reserve ?? 0, now: o.now ?? T0 };
}
function ok(a: Admission): string {
  if (!a.ok) throw new Error(`expected admission, got ${a.reason}`);
  return a.reservationId;
}
const reasonOf = (a: Admission) => (a.ok ? 'ok' : a.reason);
const retryOf = (a: Admission) => (a.ok ? undefined : a.retryAfterSeconds);
async function burst(p: Pair, n: number, input: () => AdmissionInput): Promise<Admission[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => (i % 2 ? p.b : p.a).admit(input())));
}

function conformance(name: string, backend: () => Promise<Backend>): void {
  describe(`counters conformance: ${name}`, () => {
    let be: Backend;
    let make: Make;
    beforeAll(async () => {
      be = await backend();
      make = be.make;
    });
    afterAll(async () => be?.close());

    it('admits exactly rpm of a concurrent burst across instances', async () => {
      const p = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ rpm: 60 });
      const res = await burst(p, 200, () => req(key, l));
      const admitted = res.filter((r) => r.ok);
      expect(admitted).toHaveLength(60);
      expect(admitted.map((r) => r.rateLimit.remainingRequests).sort((x, y) => x! - y!)).toEqual(Array.from({ length: 60 }, (_, i) => i));
      for (const r of res.filter((x) => !x.ok)) {
        expect(reasonOf(r)).toBe('rate_limited');
        expect(retryOf(r)).toBe(60); // all 60 were admitted at T0; the oldest leaves at T0 + 60 s
        expect(r.rateLimit).toMatchObject({ limitRequests: 60, remainingRequests: 0, resetRequestsSeconds: 60, limitTokens: null });
      }
    });

    it('limits tokens per minute and corrects the estimate on settle', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ tpm: 1000 });
      const first = await a.admit(req(key, l, { tokens: 300 }));
      expect(first.rateLimit).toMatchObject({ limitTokens: 1000, remainingTokens: 700, resetTokensSeconds: 60, limitRequests: null });
      ok(await b.admit(req(key, l, { tokens: 300, now: T0 + 1000 })));
      ok(await a.admit(req(key, l, { tokens: 300, now: T0 + 2000 })));
      const over = await b.admit(req(key, l, { tokens: 300, now: T0 + 3000 }));
      expect(reasonOf(over)).toBe('rate_limited');
      expect(over.rateLimit.remainingTokens).toBe(100);
      expect(retryOf(over)).toBe(57); // the first 300 tokens leave at T0 + 60 s
      // The first request really used 100 tokens: 200 come back.
      await b.settle({ keyId: key, reservationId: ok(first), costNanos: 0, tokens: 100, budgetPeriod: 'none', now: T0 + 3000 });
      const fits = await a.admit(req(key, l, { tokens: 300, now: T0 + 3000 }));
      expect(fits.rateLimit.remainingTokens).toBe(0);
      // A request larger than the whole limit can never pass: no retry hint.
      const huge = await a.admit(req(key, l, { tokens: 1001, now: T0 + 120_000 }));
      expect(reasonOf(huge)).toBe('rate_limited');
      expect(retryOf(huge)).toBeUndefined();
    });

    it('slides the window as the clock moves', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ rpm: 2 });
      expect((await a.admit(req(key, l, { now: T0 }))).rateLimit.resetRequestsSeconds).toBe(60);
      ok(await b.admit(req(key, l, { now: T0 + 30_000 })));
      const full = await a.admit(req(key, l, { now: T0 + 30_000 }));
      expect(reasonOf(full)).toBe('rate_limited');
      expect(retryOf(full)).toBe(30);
      expect(reasonOf(await b.admit(req(key, l, { now: T0 + 59_999 })))).toBe('rate_limited');
      ok(await a.admit(req(key, l, { now: T0 + 60_000 }))); // the T0 request has left the window
      const again = await b.admit(req(key, l, { now: T0 + 60_000 }));
      expect(retryOf(again)).toBe(30);
      ok(await a.admit(req(key, l, { now: T0 + 90_000 })));
      const later = await b.admit(req(key, l, { now: T0 + 300_000 }));
      expect(later.rateLimit).toMatchObject({ remainingRequests: 1, resetRequestsSeconds: 60 });
    });

    it('holds a concurrency slot per reservation until settled', async () => {
      const p = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ maxConcurrent: 5 });
      const res = await burst(p, 50, () => req(key, l));
      const admitted = res.filter((r) => r.ok);
      expect(admitted).toHaveLength(5);
      const refused = res.find((r) => !r.ok)!;
      expect(reasonOf(refused)).toBe('concurrency');
      expect(retryOf(refused)).toBe(1);
      await p.b.settle({ keyId: key, reservationId: ok(admitted[0]), costNanos: 0, tokens: 0, budgetPeriod: 'none', now: T0 + 10 });
      ok(await p.a.admit(req(key, l, { now: T0 + 20 })));
      expect(reasonOf(await p.b.admit(req(key, l, { now: T0 + 30 })))).toBe('concurrency');
    });

    it('never lets a concurrent burst reserve past the budget', async () => {
      const p = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ budgetNanos: 1_000_000 });
      const res = await burst(p, 200, () => req(key, l, { reserve: 100_000 }));
      expect(res.filter((r) => r.ok)).toHaveLength(10);
      const refused = res.find((r) => !r.ok)!;
      expect(reasonOf(refused)).toBe('budget_exceeded');
      expect(retryOf(refused)).toBe(1); // only in-flight reservations are in the way
      expect(refused).toMatchObject({ ok: false, heldInFlight: true });
    });

    it('names a budget refusal held only by requests in flight, and not one the spend itself causes', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ budgetNanos: 1000, budgetPeriod: 'daily' });
      const held = ok(await a.admit(req(key, l, { reserve: 600 })));
      expect(await b.admit(req(key, l, { reserve: 600 }))).toMatchObject({ ok: false, reason: 'budget_exceeded', heldInFlight: true });
      await a.settle({ keyId: key, reservationId: held, costNanos: 600, tokens: 10, budgetPeriod: 'daily', now: T0 });
      const spent = await b.admit(req(key, l, { reserve: 600 }));
      expect(spent).toMatchObject({ ok: false, reason: 'budget_exceeded' });
      expect('heldInFlight' in spent).toBe(false);
    });

    it('settling to a smaller real cost frees the rest of the reservation', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ budgetNanos: 1000 });
      const r1 = ok(await a.admit(req(key, l, { reserve: 600 })));
      expect(reasonOf(await b.admit(req(key, l, { reserve: 600 })))).toBe('budget_exceeded');
      await b.settle({ keyId: key, reservationId: r1, costNanos: 100, tokens: 10, budgetPeriod: 'none', now: T0 });
      const r2 = ok(await b.admit(req(key, l, { reserve: 600 })));
      const r3 = ok(await a.admit(req(key, l, { reserve: 300 }))); // exactly the budget
      expect(reasonOf(await a.admit(req(key, l, { reserve: 1 })))).toBe('budget_exceeded');
      await a.settle({ keyId: key, reservationId: r2, costNanos: 600, tokens: 10, budgetPeriod: 'none', now: T0 });
      await b.settle({ keyId: key, reservationId: r3, costNanos: 300, tokens: 10, budgetPeriod: 'none', now: T0 });
      const spent = await a.admit(req(key, l, { reserve: 1 }));
      expect(reasonOf(spent)).toBe('budget_exceeded');
      expect(retryOf(spent)).toBeUndefined(); // an all-time budget never comes back
      ok(await b.admit(req(key, l, { reserve: 0 })));
    });

    it('seeds period spend from the SpendSource once, and keeps large amounts exact', async () => {
      const calls: [string, string][] = [];
      const big = 4_000_000_000_000_000; // $4M in nano-USD: beyond Lua's 14-digit tostring
      const p = make({
        spendSource: async (keyId, since) => {
          calls.push([keyId, since]);
          await new Promise((r) => setTimeout(r, 5));
          return keyId.endsWith('big') ? big : 900;
        },
      });
      const key = newKey();
      const l = limits({ budgetNanos: 1000, budgetPeriod: 'daily' });
      const res = await burst(p, 20, () => req(key, l, { reserve: 50 }));
      expect(res.filter((r) => r.ok)).toHaveLength(2);
      expect(calls.length).toBeGreaterThanOrEqual(1);
      expect(calls.length).toBeLessThanOrEqual(2); // at most once per instance
      expect(calls[0]).toEqual([key, '2025-01-15T00:00:00.000Z']);
      const before = calls.length;
      expect(reasonOf(await p.a.admit(req(key, l, { reserve: 1, now: T0 + 1000 })))).toBe('budget_exceeded');
      expect(calls.length).toBe(before);

      const bigKey = `${newKey()}-big`;
      const lb = limits({ budgetNanos: big + 1 });
      const r = ok(await p.a.admit(req(bigKey, lb, { reserve: 1 })));
      expect(reasonOf(await p.b.admit(req(bigKey, lb, { reserve: 1 })))).toBe('budget_exceeded');
      await p.b.settle({ keyId: bigKey, reservationId: r, costNanos: 1, tokens: 1, budgetPeriod: 'none', now: T0 });
      ok(await p.a.admit(req(bigKey, lb, { reserve: 0 })));
      expect(reasonOf(await p.b.admit(req(bigKey, lb, { reserve: 1 })))).toBe('budget_exceeded');
    });

    it('starts a daily budget afresh the next day', async () => {
      const ledger: { at: string; cost: number }[] = [];
      const calls: string[] = [];
      const { a, b } = make({
        spendSource: async (_k, since) => {
          calls.push(since);
          return ledger.filter((e) => e.at >= since).reduce((s, e) => s + e.cost, 0);
        },
      });
      const key = newKey();
      const l = limits({ budgetNanos: 1000, budgetPeriod: 'daily' });
      const r = ok(await a.admit(req(key, l, { reserve: 1000 })));
      ledger.push({ at: new Date(T0).toISOString(), cost: 1000 });
      await b.settle({ keyId: key, reservationId: r, costNanos: 1000, tokens: 1, budgetPeriod: 'daily', now: T0 });
      const spent = await b.admit(req(key, l, { reserve: 1, now: T0 + 1000 }));
      expect(reasonOf(spent)).toBe('budget_exceeded');
      expect(retryOf(spent)).toBe(12 * 3600 - 1); // until 00:00 UTC
      const tomorrow = Date.UTC(2025, 0, 16, 0, 0, 0);
      ok(await a.admit(req(key, l, { reserve: 1000, now: tomorrow })));
      expect(calls).toEqual(['2025-01-15T00:00:00.000Z', '2025-01-16T00:00:00.000Z']);
    });

    it('releases budget and concurrency of reservations that expire', async () => {
      const { a, b } = make({ spendSource: zero, reservationTtlMs: 5000 });
      const key = newKey();
      const l = limits({ budgetNanos: 1000, maxConcurrent: 1 });
      const lost = ok(await a.admit(req(key, l, { reserve: 1000 }))); // its worker dies
      expect(reasonOf(await b.admit(req(key, l, { reserve: 1, now: T0 + 4999 })))).toBe('budget_exceeded');
      expect(reasonOf(await b.admit(req(key, l, { reserve: 0, now: T0 + 4999 })))).toBe('concurrency');
      const next = ok(await b.admit(req(key, l, { reserve: 1000, now: T0 + 5000 })));
      // A late settlement of the lost request still counts its cost, but frees nothing twice.
      await a.settle({ keyId: key, reservationId: lost, costNanos: 200, tokens: 1, budgetPeriod: 'none', now: T0 + 6000 });
      await a.settle({ keyId: key, reservationId: next, costNanos: 300, tokens: 1, budgetPeriod: 'none', now: T0 + 6000 });
      ok(await a.admit(req(key, l, { reserve: 500, now: T0 + 7000 })));
      expect(reasonOf(await b.admit(req(key, l, { reserve: 0, now: T0 + 7000 })))).toBe('concurrency');
    });

    it('refuses every later admission of a revoked key on every instance', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      const other = newKey();
      const l = limits({ rpm: 10 });
      ok(await a.admit(req(key, l)));
      await a.revoke(key);
      const refused = await b.admit(req(key, l));
      expect(reasonOf(refused)).toBe('revoked');
      expect(retryOf(refused)).toBeUndefined();
      expect(refused.rateLimit).toMatchObject({ limitRequests: 10, remainingRequests: 9 });
      await b.reset(key);
      expect(reasonOf(await a.admit(req(key, l, { now: T0 + 3_600_000 })))).toBe('revoked');
      ok(await b.admit(req(other, l)));
    });

    it('tells any instance at once whether a key is revoked', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      expect(await b.isRevoked(key)).toBe(false);
      await a.revoke(key);
      expect(await b.isRevoked(key)).toBe(true);
      expect(await a.isRevoked(newKey())).toBe(false);
    });

    it('settles a request at most once per ledger id, whichever instance settles it', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ budgetNanos: 10_000 });
      const r = ok(await a.admit(req(key, l, { reserve: 1000 })));
      const entry = ledgerEntry(key, 300);
      expect((await a.settle({ keyId: key, reservationId: r, costNanos: 300, tokens: 5, budgetPeriod: 'none', now: T0, ledger: entry })).applied).toBe(true);
      // The same request settled again (a worker that was only slow, after its ingress billed it).
      expect((await b.settle({ keyId: key, reservationId: r, costNanos: 500, tokens: 5, budgetPeriod: 'none', now: T0, ledger: { ...entry, costNanos: 500 } })).applied).toBe(false);
      // A release without a ledger record never counts as the settlement.
      expect((await b.settle({ keyId: key, reservationId: r, costNanos: 0, tokens: 0, budgetPeriod: 'none', now: T0 })).applied).toBe(true);
      ok(await b.admit(req(key, l, { reserve: 9700 })));
      expect(reasonOf(await a.admit(req(key, l, { reserve: 1 })))).toBe('budget_exceeded');
    });

    it('lets refused requests consume nothing', async () => {
      const { a, b } = make({ spendSource: zero });
      const key = newKey();
      const l = limits({ rpm: 3, tpm: 1000, maxConcurrent: 1, budgetNanos: 1000 });
      const r1 = ok(await a.admit(req(key, l, { tokens: 100, reserve: 500 })));
      expect(reasonOf(await b.admit(req(key, l, { tokens: 100, reserve: 600 })))).toBe('budget_exceeded');
      expect(reasonOf(await a.admit(req(key, l, { tokens: 950, reserve: 100 })))).toBe('rate_limited');
      expect(reasonOf(await b.admit(req(key, l, { tokens: 100, reserve: 100 })))).toBe('concurrency');
      await b.settle({ keyId: key, reservationId: r1, costNanos: 500, tokens: 100, budgetPeriod: 'none', now: T0 });
      const r2 = await a.admit(req(key, l, { tokens: 100, reserve: 500 }));
      expect(r2.rateLimit).toMatchObject({ remainingRequests: 1, remainingTokens: 800 });
      await a.settle({ keyId: key, reservationId: ok(r2), costNanos: 500, tokens: 100, budgetPeriod: 'none', now: T0 });
      ok(await b.admit(req(key, l, { tokens: 100, reserve: 0 })));
      expect(reasonOf(await a.admit(req(key, l, { tokens: 1, reserve: 1, now: T0 + 61_000 })))).toBe('budget_exceeded');
    });

    it('reports null rate-limit state for keys without limits and hints sensible retries', async () => {
      const { a } = make({ spendSource: zero });
      const free = await a.admit(req(newKey(), limits({})));
      expect(free).toMatchObject({
        ok: true,
        rateLimit: { limitRequests: null, remainingRequests: null, resetRequestsSeconds: null, limitTokens: null, remainingTokens: null, resetTokensSeconds: null },
      });
      const closedKey = await a.admit(req(newKey(), limits({ rpm: 0 })));
      expect(reasonOf(closedKey)).toBe('rate_limited');
      expect(retryOf(closedKey)).toBeUndefined();
      const monthly = limits({ budgetNanos: 10, budgetPeriod: 'monthly' });
      const key = newKey();
      const r = ok(await a.admit(req(key, monthly, { reserve: 10 })));
      await a.settle({ keyId: key, reservationId: r, costNanos: 10, tokens: 0, budgetPeriod: 'monthly', now: T0 });
      expect(retryOf(await a.admit(req(key, monthly, { reserve: 1 })))).toBe((Date.UTC(2025, 1, 1) - T0) / 1000);
      expect(reasonOf(await a.admit(req(key, monthly, { reserve: 11, now: Date.UTC(2025, 1, 1) })))).toBe('budget_exceeded');
      expect(retryOf(await a.admit(req(key, monthly, { reserve: 11, now: Date.UTC(2025, 1, 1) })))).toBeUndefined();
    });

    it('reset forgets cached spend and windows', async () => {
      let ledger = 0;
      const { a, b } = make({ spendSource: async () => ledger });
      const key = newKey();
      const l = limits({ rpm: 1, budgetNanos: 1000 });
      const r = ok(await a.admit(req(key, l, { reserve: 1000 })));
      await a.settle({ keyId: key, reservationId: r, costNanos: 1000, tokens: 1, budgetPeriod: 'none', now: T0 });
      ledger = 200; // e.g. the ledger was corrected by an operator
      expect(reasonOf(await b.admit(req(key, l, { reserve: 1 })))).toBe('budget_exceeded');
      await b.reset(key);
      ok(await a.admit(req(key, l, { reserve: 800 })));
      expect(reasonOf(await b.admit(req(key, l, { reserve: 0 })))).toBe('rate_limited');
    });

    describe('projects (a second level reserved in the same step)', () => {
      const inProject = (input: AdmissionInput, projectId: string, l: KeyLimits): AdmissionInput => ({ ...input, project: { id: projectId, limits: l } });
      const levelOf = (a: Admission) => (a.ok ? 'ok' : a.level);

      it("never lets a burst over several keys and both instances reserve past the project's budget", async () => {
        const p = make({ spendSource: zero, projectSpendSource: zero });
        const project = newKey();
        const keys = [newKey(), newKey(), newKey(), newKey()];
        const pl = limits({ budgetNanos: 10_000 });
        let i = 0;
        const res = await burst(p, 200, () => inProject(req(keys[i++ % keys.length]!, limits({ budgetNanos: 1_000_000 }), { reserve: 1000 }), project, pl));
        expect(res.filter((r) => r.ok)).toHaveLength(10);
        for (const r of res.filter((x) => !x.ok)) expect([reasonOf(r), levelOf(r)]).toEqual(['budget_exceeded', 'project']);
      });

      it('reserves at both levels or at neither, and settles both', async () => {
        const { a, b } = make({ spendSource: zero, projectSpendSource: zero });
        const project = newKey();
        const [k1, k2] = [newKey(), newKey()];
        const pl = limits({ budgetNanos: 1000, rpm: 3 });
        const small = limits({ budgetNanos: 500 });
        // The key refuses: the project keeps nothing of it.
        expect([reasonOf(await a.admit(inProject(req(k1, small, { reserve: 600 }), project, pl))), levelOf(await a.admit(inProject(req(k1, small, { reserve: 600 }), project, pl)))]).toEqual(['budget_exceeded', 'key']);
        const r1 = ok(await a.admit(inProject(req(k1, small, { reserve: 500 }), project, pl)));
        // The project refuses (its budget): the key keeps nothing of it either.
        expect(levelOf(await b.admit(inProject(req(k2, limits({}), { reserve: 600 }), project, pl)))).toBe('project');
        const r2 = ok(await b.admit(inProject(req(k2, limits({}), { reserve: 500 }), project, pl)));
        // rpm 3 at the project: the third request of the minute fits, the fourth does not.
        const third = await a.admit(inProject(req(k2, limits({}), { reserve: 0 }), project, pl));
        expect(third.ok).toBe(true);
        const fourth = await a.admit(inProject(req(k1, limits({}), { reserve: 0 }), project, pl));
        expect([reasonOf(fourth), levelOf(fourth)]).toEqual(['rate_limited', 'project']);
        expect(fourth.rateLimit).toMatchObject({ limitRequests: 3, remainingRequests: 0 });
        // Settling r1 to 100 frees 400 at both levels: 400 more fits in the project, 401 does not.
        await b.settle({ keyId: k1, reservationId: r1, costNanos: 100, tokens: 10, budgetPeriod: 'none', project: { id: project, budgetPeriod: 'none' }, now: T0 });
        const wider = limits({ budgetNanos: 1000 });
        expect(levelOf(await a.admit(inProject(req(k2, limits({}), { reserve: 401, now: T0 + 61_000 }), project, wider)))).toBe('project');
        const r3 = ok(await a.admit(inProject(req(k2, limits({}), { reserve: 400, now: T0 + 61_000 }), project, wider)));
        await a.settle({ keyId: k2, reservationId: r2, costNanos: 500, tokens: 10, budgetPeriod: 'none', project: { id: project, budgetPeriod: 'none' }, now: T0 });
        await a.settle({ keyId: k2, reservationId: r3, costNanos: 400, tokens: 10, budgetPeriod: 'none', project: { id: project, budgetPeriod: 'none' }, now: T0 });
        // The project has spent exactly its budget; key k1 has spent 100 of its 500.
        expect(levelOf(await b.admit(inProject(req(k1, small, { reserve: 1, now: T0 + 61_000 }), project, wider)))).toBe('project');
        ok(await b.admit(req(k1, small, { reserve: 400, now: T0 + 61_000 })));
      });

      it("seeds a project's period spend from its own source", async () => {
        const seen: string[] = [];
        const p = make({ spendSource: zero, projectSpendSource: async (id) => (seen.push(id), 900) });
        const project = newKey();
        const pl = limits({ budgetNanos: 1000, budgetPeriod: 'daily' });
        expect(levelOf(await p.a.admit(inProject(req(newKey(), limits({}), { reserve: 101 }), project, pl)))).toBe('project');
        ok(await p.b.admit(inProject(req(newKey(), limits({}), { reserve: 100 }), project, pl)));
        expect(seen[0]).toBe(project);
      });
    });
  });
}

describe('budget periods', () => {
  it('start at 00:00 UTC, weeks on Monday, months on the 1st', () => {
    const sunday = Date.UTC(2025, 0, 19, 23, 59, 59);
    expect(periodStart('none', T0)).toBe('1970-01-01T00:00:00.000Z');
    expect(periodEnd('none', T0)).toBeNull();
    expect(periodStart('daily', T0)).toBe('2025-01-15T00:00:00.000Z');
    expect(periodEnd('daily', T0)).toBe('2025-01-16T00:00:00.000Z');
    expect(periodStart('weekly', T0)).toBe('2025-01-13T00:00:00.000Z');
    expect(periodStart('weekly', sunday)).toBe('2025-01-13T00:00:00.000Z');
    expect(periodEnd('weekly', sunday)).toBe('2025-01-20T00:00:00.000Z');
    expect(periodStart('weekly', Date.UTC(2025, 0, 20))).toBe('2025-01-20T00:00:00.000Z');
    expect(periodStart('monthly', Date.UTC(2024, 11, 31, 23))).toBe('2024-12-01T00:00:00.000Z');
    expect(periodEnd('monthly', Date.UTC(2024, 11, 31, 23))).toBe('2025-01-01T00:00:00.000Z');
    expect(periodEnd('monthly', Date.UTC(2024, 1, 10))).toBe('2024-03-01T00:00:00.000Z');
  });
});

conformance('memory', async () => ({
  make: (opts) => {
    const c = createMemoryCounters(opts);
    return { a: c, b: c };
  },
  close: async () => undefined,
}));

const REDIS_URL = process.env.REDIS_URL;
if (REDIS_URL) {
  conformance('redis', async () => {
    // A prefix of our own per run, so parallel runs never collide; everything under it is deleted.
    const keyPrefix = `switchboard-test:${randomBytes(6).toString('hex')}:`;
    const one = new Redis(REDIS_URL);
    const two = new Redis(REDIS_URL);
    const made: Counters[] = [];
    return {
      make: (opts) => {
        const pair = { a: createRedisCounters({ redis: one, keyPrefix, ...opts }), b: createRedisCounters({ redis: two, keyPrefix, ...opts }) };
        made.push(pair.a, pair.b);
        return pair;
      },
      close: async () => {
        await Promise.all(made.map((c) => c.close()));
        // Every key the counters wrote lives under the prefix, and all but revocations expire.
        let cursor = '0';
        const keys: string[] = [];
        do {
          const [next, batch] = await one.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
          cursor = next;
          keys.push(...batch);
        } while (cursor !== '0');
        const ttls = await Promise.all(keys.map((k) => one.pttl(k)));
        // The ledger stream is emptied by its consumer, not by a TTL.
        const forever = keys.filter((k, i) => ttls[i] < 0 && !k.endsWith(':revoked') && !k.endsWith(':ledger'));
        if (keys.length) await one.del(...keys);
        await Promise.all([one.quit(), two.quit()]);
        expect(forever).toEqual([]);
        expect(keys.length).toBeGreaterThan(0);
      },
    };
  });
} else {
  console.warn('counters conformance: REDIS_URL is not set, so the Redis counters are NOT tested (set REDIS_URL=redis://127.0.0.1:6379 to run them)');
  describe.skip('counters conformance: redis (REDIS_URL not set)', () => {
    it('needs REDIS_URL', () => undefined);
  });
}
