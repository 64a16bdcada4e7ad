import type { Redis } from 'ioredis';
import type { Admission, AdmissionInput, Counters, SettleReceipt, Settlement, SpendSource } from './counters.js';
import { BatchedRecordRemoval } from './batched-record-removal.js';
import { encodeLedgerRecord, ledgerStreamKey, LedgerStream } from './ledger-stream.js';
import {
  DEFAULT_RESERVATION_TTL_MS,
  WINDOW_MS,
  checkAdmissionInput,
  checkNanos,
  newReservationId,
  projectLimits,
  projectSubject,
  settledMarkerTtlMs,
  toAdmission,
  type AdmissionStatus,
  type Decision,
} from './memory-counters.js';
import { periodBoundsMs, periodStart } from './period.js';
import { loadLuaScript, preloadLuaScripts, runLuaScript, type LuaScript } from '../redis-lua.js';

// Counters in Redis for the scaled-out deployment: every ingress instance admits through the
// same keys, so limits and budgets hold across all of them. Admission is ONE Lua call
// (lua/admit.lua) in the common case; settlement is another (lua/settle.lua). Both take the
// caller's `now` rather than Redis TIME (see the header of admit.lua), like the memory counters.
//
// Keys per API key share the hash tag {keyId}, so each script touches a single cluster slot:
//   <keyPrefix>{<keyId>}:revoked | :win | :res | :state | :spend | :settled:<ledgerId>
// plus one ledger stream for the deployment, <keyPrefix>ledger (see ledger-stream.ts).
//
// The caller owns the ioredis connection: close() stops this instance, and the caller quits the
// connection (it may be shared with other users).

// The scripts ship next to this file (src/shared/counters/lua).
const ADMIT = loadLuaScript(new URL('./lua/admit.lua', import.meta.url));
const SETTLE = loadLuaScript(new URL('./lua/settle.lua', import.meta.url));

/** Spend is held a little past its period's end, so a settlement at the boundary still finds it. */
const SPEND_GRACE_MS = 3_600_000;
/** An all-time ('none') spend that nobody touches for this long is re-read from the ledger. */
const ALL_TIME_SPEND_TTL_MS = 30 * 86_400_000;

/** The key's revocation flag (EXISTS), also read by the worker transport as a job starts. */
export function revokedKey(keyPrefix: string, keyId: string): string {
  return `${keyPrefix}{${keyId}}:revoked`;
}

const STATUSES = new Set<string>(['ok', 'revoked', 'rate_limited', 'budget_exceeded', 'concurrency']);

export function createRedisCounters(options: {
  redis: Redis;
  keyPrefix: string;
  spendSource: SpendSource;
  /** A project's period spend (the ledger of its keys); 0 when absent. */
  projectSpendSource?: SpendSource;
  reservationTtlMs?: number;
}): Counters {
  const { redis, keyPrefix, spendSource } = options;
  const ttlMs = options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError('counters: reservationTtlMs must be a positive integer');
  // Window, holds and state must outlive both the window and the longest reservation.
  const stateTtlMs = Math.max(WINDOW_MS, ttlMs) + WINDOW_MS;
  const markerTtlMs = settledMarkerTtlMs(ttlMs);
  const stream = new LedgerStream(redis, ledgerStreamKey(keyPrefix));
  // Written records leave the stream one XDEL per batch, not per request (batched-record-removal.ts).
  const removal = new BatchedRecordRemoval(stream);
  // Concurrent admissions on this instance share one ledger read per key and period.
  const seeding = new Map<string, Promise<number>>();
  let closed = false;

  // Ship both scripts once now, so the first admission is already an EVALSHA. If this loses the
  // race (or Redis restarts and forgets them) run() falls back to EVAL, which caches them again.
  preloadLuaScripts(redis, [ADMIT, SETTLE]);

  const run = (script: LuaScript, keys: string[], args: (string | number)[]) => runLuaScript(redis, script, keys, args);

  function keysFor(keyId: string) {
    const base = `${keyPrefix}{${keyId}}:`;
    return { revoked: revokedKey(keyPrefix, keyId), win: `${base}win`, res: `${base}res`, state: `${base}state`, spend: `${base}spend` };
  }

  function spendTtlMs(end: number | null, now: number): number {
    return end === null ? ALL_TIME_SPEND_TTL_MS : Math.max(0, end - now) + SPEND_GRACE_MS;
  }

  type Level = 'key' | 'project';
  async function callAdmit(input: AdmissionInput, reservationId: string, seed: string, projectSeed: string): Promise<{ decision: Decision | 'seed'; level: Level }> {
    const { limits, now } = input;
    const k = keysFor(input.keyId);
    const { start, end } = periodBoundsMs(limits.budgetPeriod, now);
    const keys = [k.revoked, k.win, k.res, k.state, k.spend];
    const projectArgs: (string | number)[] = [0];
    if (input.project) {
      // The project's keys live under their own hash tag (see the header of admit.lua).
      const p = keysFor(projectSubject(input.project.id));
      const pl = projectLimits(input.project.limits);
      const bounds = periodBoundsMs(pl.budgetPeriod, now);
      keys.push(p.win, p.res, p.state, p.spend);
      projectArgs.splice(0, 1, 1, pl.rpm ?? -1, pl.tpm ?? -1, pl.budgetNanos ?? -1, pl.budgetPeriod, bounds.start, bounds.end ?? -1, spendTtlMs(bounds.end, now), projectSeed);
    }
    const reply = await run(ADMIT, keys, [
      now,
      reservationId,
      input.tokens,
      input.reserveNanos,
      limits.rpm ?? -1,
      limits.tpm ?? -1,
      limits.maxConcurrent ?? -1,
      limits.budgetNanos ?? -1,
      limits.budgetPeriod,
      start,
      end ?? -1,
      ttlMs,
      stateTtlMs,
      spendTtlMs(end, now),
      seed,
      ...projectArgs,
    ]);
    if (!Array.isArray(reply) || reply.length !== 7) throw new Error(`counters: unexpected admit reply ${JSON.stringify(reply)}`);
    const [status, windowRequests, windowTokens, resetMs, retryMs, level, held] = reply as [string, number, number, number, number, Level, string | undefined];
    if (status === 'seed') return { decision: 'seed', level };
    if (held === 'in_flight') return { decision: { status: status as AdmissionStatus, windowRequests, windowTokens, resetMs, retryMs: retryMs < 0 ? null : retryMs, heldInFlight: true }, level };
    if (!STATUSES.has(status)) throw new Error(`counters: unexpected admit status ${status}`);
    return { decision: { status: status as AdmissionStatus, windowRequests, windowTokens, resetMs, retryMs: retryMs < 0 ? null : retryMs }, level };
  }

  function loadSeed(input: AdmissionInput, level: Level): Promise<number> {
    const project = level === 'project' ? input.project : undefined;
    const subject = project ? projectSubject(project.id) : input.keyId;
    const period = project ? project.limits.budgetPeriod : input.limits.budgetPeriod;
    const since = periodStart(period, input.now);
    const k = `${subject}\u0000${period}\u0000${since}`;
    let p = seeding.get(k);
    if (!p) {
      // Records still in the ledger stream are spend the store does not show yet (stream first:
      // see LedgerStream.pendingNanos). A project's seed reads the store only: its keys' records
      // still in the stream at that moment are not counted (a seed is read once per period).
      p = (project
        ? (options.projectSpendSource?.(project.id, since) ?? Promise.resolve(0)).then((nanos) => checkNanos('SpendSource result', nanos))
        : stream.pendingNanos(input.keyId, since).then(async (pending) => pending + checkNanos('SpendSource result', await spendSource(input.keyId, since)))
      ).finally(() => seeding.delete(k));
      seeding.set(k, p);
    }
    return p;
  }

  return {
    async admit(input): Promise<Admission> {
      if (closed) throw new Error('counters: closed');
      checkAdmissionInput(input);
      const reservationId = newReservationId(input.requestId);
      const seeds: Record<Level, string> = { key: '', project: '' };
      // Rare path (first use of a key or project in a period): read the ledger, then admit again
      // with the seed, which the script stores only if nobody stored this period's spend meanwhile.
      for (let round = 0; round < 3; round++) {
        const { decision, level } = await callAdmit(input, reservationId, seeds.key, seeds.project);
        if (decision === 'seed') {
          if (seeds[level] !== '') break;
          seeds[level] = String(await loadSeed(input, level));
          continue;
        }
        const limits = level === 'project' && input.project ? projectLimits(input.project.limits) : input.limits;
        return toAdmission(limits, decision, reservationId, level);
      }
      throw new Error('counters: spend seed was not applied');
    },

    async settle(s: Settlement): Promise<SettleReceipt> {
      if (closed) throw new Error('counters: closed');
      checkNanos('costNanos', s.costNanos);
      if (!Number.isSafeInteger(s.tokens) || s.tokens < 0) throw new RangeError(`counters: tokens must be a non-negative integer, got ${s.tokens}`);
      const k = keysFor(s.keyId);
      const { start, end } = periodBoundsMs(s.budgetPeriod, s.now);
      const settledKey = `${keyPrefix}{${s.keyId}}:settled:${s.ledger?.id ?? ''}`;
      const keys = [k.res, k.state, k.win, k.spend, settledKey, stream.key];
      const projectArgs: (string | number)[] = [0];
      if (s.project) {
        const p = keysFor(projectSubject(s.project.id));
        const bounds = periodBoundsMs(s.project.budgetPeriod, s.now);
        keys.push(p.res, p.state, p.win, p.spend);
        projectArgs.splice(0, 1, 1, s.project.budgetPeriod, bounds.start, spendTtlMs(bounds.end, s.now));
      }
      const reply = await run(SETTLE, keys, [
        s.reservationId,
        s.costNanos,
        s.tokens,
        s.budgetPeriod,
        start,
        spendTtlMs(end, s.now),
        s.ledger ? encodeLedgerRecord(s.ledger) : '',
        markerTtlMs,
        ...projectArgs,
      ]);
      if (!Array.isArray(reply) || reply.length !== 3) throw new Error(`counters: unexpected settle reply ${JSON.stringify(reply)}`);
      const [, applied, streamId] = reply as [number, number, string];
      return applied === 1 ? (streamId ? { applied: true, streamId } : { applied: true }) : { applied: false };
    },

    async revoke(keyId) {
      // No TTL: a revocation must never lapse.
      await redis.set(keysFor(keyId).revoked, '1');
    },

    async forgetLedgerRecord(streamId) {
      await removal.remove(streamId);
    },

    async isRevoked(keyId) {
      return (await redis.exists(keysFor(keyId).revoked)) === 1;
    },

    async reset(keyId) {
      const k = keysFor(keyId);
      // Reservations stay: they still hold money and slots until settled or expired. The window
      // log and its token total go together, atomically, so they never disagree.
      await redis.multi().del(k.spend, k.win).hdel(k.state, 'tok').exec();
    },

    async close() {
      closed = true;
      // Records forgotten but not yet removed: one last XDEL while the caller's connection is open.
      await removal.flush().catch(() => undefined);
    },
  };
}
