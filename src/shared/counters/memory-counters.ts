import { randomBytes } from 'node:crypto';
import type { BudgetPeriod } from '../store/store.js';
import type { Admission, AdmissionInput, Counters, KeyLimits, RateLimitState, SettleReceipt, Settlement, SpendSource } from './counters.js';
import { periodBoundsMs, periodStart } from './period.js';

// In-memory counters for the embedded default (one process holds every ingress and worker).
// Node runs each admission's decision synchronously, so check-and-reserve is atomic without
// locks; the only await is the one-off read of a key's period spend from the ledger, after
// which the decision is taken again from scratch. The Redis counters mirror this logic in Lua
// (lua/admit.lua, lua/settle.lua); test/counters-conformance.test.ts holds both to one behaviour.

/** Rate limits use a sliding log over the last 60 s: exact under bursts, no 2x at window edges. */
export const WINDOW_MS = 60_000;
/** A reservation a dead worker never settles is released after this long. */
export const DEFAULT_RESERVATION_TTL_MS = 600_000;
/** Retry hint when only in-flight requests stand in the way: they settle within seconds. */
export const IN_FLIGHT_RETRY_MS = 1_000;

/**
 * How long a settled ledger id is remembered: past the longest a late settlement of the same
 * request can arrive (its reservation's lifetime), so a request is never charged twice.
 */
export function settledMarkerTtlMs(reservationTtlMs: number): number {
  return reservationTtlMs + 300_000;
}

export type AdmissionStatus = 'ok' | 'revoked' | 'rate_limited' | 'budget_exceeded' | 'concurrency';

/** One admission decision, in the shape both implementations produce before it becomes an Admission. */
export interface Decision {
  status: AdmissionStatus;
  /** Requests and tokens in the window, counting this request only when it was admitted. */
  windowRequests: number;
  windowTokens: number;
  /** Until the window is empty again (OpenAI's "reset to its initial state"). */
  resetMs: number;
  /** Until a retry may succeed; null when it never can (e.g. the request alone exceeds the limit). */
  retryMs: number | null;
  /** A budget refusal caused only by other requests' reservations. */
  heldInFlight?: boolean;
}

/** Rejects inputs that would corrupt integer money or token arithmetic, in both implementations. */
export function checkAdmissionInput(input: AdmissionInput): void {
  const { limits } = input;
  for (const [name, value] of [
    ['tokens', input.tokens],
    ['reserveNanos', input.reserveNanos],
    ['now', input.now],
    ['rpm', limits.rpm ?? 0],
    ['tpm', limits.tpm ?? 0],
    ['maxConcurrent', limits.maxConcurrent ?? 0],
    ['budgetNanos', limits.budgetNanos ?? 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`counters: ${name} must be a non-negative integer, got ${value}`);
  }
}

export function checkNanos(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`counters: ${name} must be a non-negative integer of nano-USD, got ${value}`);
  return value;
}

// A random process prefix and a counter make ids unique without a system call per request.
const processTag = randomBytes(6).toString('hex');
let reservationSequence = 0;

export function newReservationId(requestId: string): string {
  // The request id keeps reservations traceable; the suffix keeps a re-admitted request distinct.
  reservationSequence += 1;
  return `${requestId}.${processTag}${reservationSequence.toString(36)}`;
}

const seconds = (ms: number): number => Math.max(0, Math.ceil(ms / 1000));

export function toRateLimitState(limits: KeyLimits, d: Decision): RateLimitState {
  const { rpm, tpm } = limits;
  return {
    limitRequests: rpm,
    remainingRequests: rpm === null ? null : Math.max(0, rpm - d.windowRequests),
    resetRequestsSeconds: rpm === null ? null : seconds(d.resetMs),
    limitTokens: tpm,
    remainingTokens: tpm === null ? null : Math.max(0, tpm - d.windowTokens),
    resetTokensSeconds: tpm === null ? null : seconds(d.resetMs),
  };
}

export function toAdmission(limits: KeyLimits, d: Decision, reservationId: string, level: 'key' | 'project' = 'key'): Admission {
  const rateLimit = toRateLimitState(limits, d);
  if (d.status === 'ok') return { ok: true, reservationId, rateLimit };
  // Retry-After is whole seconds; at least 1 so a client never spins.
  const held = d.heldInFlight ? { heldInFlight: true as const } : {};
  return d.retryMs === null
    ? { ok: false, reason: d.status, level, rateLimit, ...held }
    : { ok: false, reason: d.status, level, retryAfterSeconds: Math.max(1, seconds(d.retryMs)), rateLimit, ...held };
}

/** The counters' own id of a project, apart from every key id (state, spend and seeds are per id). */
export function projectSubject(projectId: string): string {
  return `\u0001project:${projectId}`;
}

/** A project's limits as the counters apply them: no concurrency slots of its own. */
export function projectLimits(limits: KeyLimits): KeyLimits {
  return { ...limits, maxConcurrent: null };
}

interface WindowEntry {
  at: number;
  tokens: number;
  /** False once it left the window (or reset() dropped it), so a late settle leaves the sum alone. */
  live: boolean;
}

interface Reservation {
  nanos: number;
  expiresAt: number;
  entry: WindowEntry | null;
}

interface KeyState {
  /** Sorted by `at`; entries before `head` have left the window (compacted now and then). */
  window: WindowEntry[];
  head: number;
  windowTokens: number;
  reservations: Map<string, Reservation>;
  reservedNanos: number;
  /** Earliest reservation expiry, so the common admission skips scanning reservations. */
  nextExpiry: number;
}

interface SpendCache {
  period: BudgetPeriod;
  start: number;
  nanos: number;
}

const SEED = Symbol('seed');

export function createMemoryCounters(options: { spendSource: SpendSource; projectSpendSource?: SpendSource; reservationTtlMs?: number }): Counters {
  const ttlMs = options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError('counters: reservationTtlMs must be a positive integer');
  const states = new Map<string, KeyState>();
  const spend = new Map<string, SpendCache>();
  const revoked = new Set<string>();
  // Ledger ids already settled, with when they may be forgotten (insertion order is time order).
  const settled = new Map<string, number>();
  const settledTtlMs = settledMarkerTtlMs(ttlMs);
  // Concurrent admissions for a key share one ledger read per period.
  const seeding = new Map<string, Promise<number>>();
  let closed = false;

  function stateFor(keyId: string): KeyState {
    let st = states.get(keyId);
    if (!st) {
      st = { window: [], head: 0, windowTokens: 0, reservations: new Map(), reservedNanos: 0, nextExpiry: Infinity };
      states.set(keyId, st);
    }
    return st;
  }

  function dropIfIdle(keyId: string, st: KeyState): void {
    if (st.head >= st.window.length && st.reservations.size === 0) states.delete(keyId);
  }

  function expire(st: KeyState, now: number): void {
    const cutoff = now - WINDOW_MS;
    while (st.head < st.window.length && st.window[st.head].at <= cutoff) {
      const e = st.window[st.head++];
      e.live = false;
      st.windowTokens -= e.tokens;
    }
    if (st.head > 1024 && st.head * 2 > st.window.length) {
      st.window = st.window.slice(st.head);
      st.head = 0;
    }
    if (now >= st.nextExpiry) {
      let next = Infinity;
      for (const [id, r] of st.reservations) {
        if (r.expiresAt <= now) {
          st.reservations.delete(id);
          st.reservedNanos -= r.nanos;
        } else if (r.expiresAt < next) next = r.expiresAt;
      }
      st.nextExpiry = next;
    }
  }

  /** The spend cache answers for this period unless it is for another period kind or an older one. */
  function freshSpend(keyId: string, period: BudgetPeriod, start: number): SpendCache | null {
    const c = spend.get(keyId);
    return c && c.period === period && c.start >= start ? c : null;
  }

  function rateRetryMs(st: KeyState, limits: KeyLimits, tokens: number, now: number): number | null {
    const { rpm, tpm } = limits;
    const live = st.window.length - st.head;
    let retry = 0;
    if (rpm !== null && live + 1 > rpm) {
      if (rpm === 0) return null;
      // The (live - rpm)-th oldest entry must leave before one more request fits.
      retry = Math.max(retry, st.window[st.head + live - rpm].at + WINDOW_MS - now);
    }
    if (tpm !== null && st.windowTokens + tokens > tpm) {
      if (tokens > tpm) return null;
      let freed = 0;
      for (let i = st.head; i < st.window.length; i++) {
        freed += st.window[i].tokens;
        if (st.windowTokens - freed + tokens <= tpm) {
          retry = Math.max(retry, st.window[i].at + WINDOW_MS - now);
          break;
        }
      }
    }
    return retry;
  }

  function budgetRetryMs(limits: KeyLimits, spent: number, reserve: number, now: number): number | null {
    const budget = limits.budgetNanos as number;
    if (reserve > budget) return null;
    if (spent + reserve <= budget) return IN_FLIGHT_RETRY_MS;
    const { end } = periodBoundsMs(limits.budgetPeriod, now);
    return end === null ? null : end - now;
  }

  /**
   * One subject's (key's or project's) decision. With `commit` false an admissible request changes
   * nothing, so a two-level admission can check both levels before it reserves at either.
   */
  function decide(keyId: string, limits: KeyLimits, input: AdmissionInput, reservationId: string, seed: number | undefined, commit: boolean): Decision | typeof SEED {
    const { now, tokens, reserveNanos } = input;
    const st = stateFor(keyId);
    expire(st, now);
    const live = st.window.length - st.head;
    const refuse = (status: AdmissionStatus, retryMs: number | null, heldInFlight = false): Decision => {
      dropIfIdle(keyId, st);
      const resetMs = live > 0 ? st.window[st.window.length - 1].at + WINDOW_MS - now : 0;
      return heldInFlight ? { status, windowRequests: live, windowTokens: st.windowTokens, resetMs, retryMs, heldInFlight } : { status, windowRequests: live, windowTokens: st.windowTokens, resetMs, retryMs };
    };
    if (revoked.has(keyId)) return refuse('revoked', null);

    if (limits.budgetNanos !== null) {
      const start = periodBoundsMs(limits.budgetPeriod, now).start;
      let cache = freshSpend(keyId, limits.budgetPeriod, start);
      if (!cache) {
        if (seed === undefined) return SEED;
        cache = { period: limits.budgetPeriod, start, nanos: seed };
        spend.set(keyId, cache);
      }
      if (cache.nanos + st.reservedNanos + reserveNanos > limits.budgetNanos) {
        const held = reserveNanos <= limits.budgetNanos && cache.nanos + reserveNanos <= limits.budgetNanos;
        return refuse('budget_exceeded', budgetRetryMs(limits, cache.nanos, reserveNanos, now), held);
      }
    }

    const overRpm = limits.rpm !== null && live + 1 > limits.rpm;
    const overTpm = limits.tpm !== null && st.windowTokens + tokens > limits.tpm;
    if (overRpm || overTpm) return refuse('rate_limited', rateRetryMs(st, limits, tokens, now));

    if (limits.maxConcurrent !== null && st.reservations.size >= limits.maxConcurrent) {
      return refuse('concurrency', limits.maxConcurrent === 0 ? null : IN_FLIGHT_RETRY_MS);
    }
    if (!commit) {
      const resetMs = live > 0 ? st.window[st.window.length - 1].at + WINDOW_MS - now : 0;
      return { status: 'ok', windowRequests: live, windowTokens: st.windowTokens, resetMs, retryMs: null };
    }

    // Admitted: record the window entry (only keys with a rate limit need the log) and the reservation.
    let entry: WindowEntry | null = null;
    if (limits.rpm !== null || limits.tpm !== null) {
      entry = { at: now, tokens, live: true };
      const w = st.window;
      if (w.length === st.head || w[w.length - 1].at <= now) w.push(entry);
      else {
        // A caller's clock ran slightly behind another's: keep the log sorted.
        let i = w.length;
        while (i > st.head && w[i - 1].at > now) i--;
        w.splice(i, 0, entry);
      }
      st.windowTokens += tokens;
    }
    const expiresAt = now + ttlMs;
    st.reservations.set(reservationId, { nanos: reserveNanos, expiresAt, entry });
    st.reservedNanos += reserveNanos;
    if (expiresAt < st.nextExpiry) st.nextExpiry = expiresAt;
    const count = st.window.length - st.head;
    const resetMs = count > 0 ? st.window[st.window.length - 1].at + WINDOW_MS - now : 0;
    return { status: 'ok', windowRequests: count, windowTokens: st.windowTokens, resetMs, retryMs: null };
  }

  function loadSeed(keyId: string, period: BudgetPeriod, now: number, projectId?: string): Promise<number> {
    const since = periodStart(period, now);
    const k = `${keyId}\u0000${period}\u0000${since}`;
    let p = seeding.get(k);
    if (!p) {
      const source = projectId === undefined ? options.spendSource(keyId, since) : (options.projectSpendSource?.(projectId, since) ?? Promise.resolve(0));
      p = source
        .then((n) => checkNanos('SpendSource result', n))
        .finally(() => seeding.delete(k));
      seeding.set(k, p);
    }
    return p;
  }

  function settleSubject(keyId: string, budgetPeriod: BudgetPeriod, s: Settlement): void {
    const st = states.get(keyId);
    const r = st?.reservations.get(s.reservationId);
    if (st && r) {
      st.reservations.delete(s.reservationId);
      st.reservedNanos -= r.nanos;
      // Correct the window's estimate to the tokens really used, if the entry is still counted.
      if (r.entry?.live) {
        st.windowTokens += s.tokens - r.entry.tokens;
        r.entry.tokens = s.tokens;
      }
      dropIfIdle(keyId, st);
    }
    // Spend grows even when the reservation already expired: the money was really spent. When
    // the cache is for another period (or absent), it is left alone: the next admission seeds
    // from the ledger, which holds this cost once the worker has recorded it.
    const c = spend.get(keyId);
    if (c && c.period === budgetPeriod && c.start === periodBoundsMs(budgetPeriod, s.now).start) c.nanos += s.costNanos;
  }

  return {
    async admit(input) {
      if (closed) throw new Error('counters: closed');
      checkAdmissionInput(input);
      const reservationId = newReservationId(input.requestId);
      const project = input.project && { subject: projectSubject(input.project.id), id: input.project.id, limits: projectLimits(input.project.limits) };
      let keySeed: number | undefined;
      let projectSeed: number | undefined;
      // At most one ledger read per level; after it the decision is taken again from scratch.
      for (let round = 0; round < 3; round++) {
        const d = decide(input.keyId, input.limits, input, reservationId, keySeed, project === undefined);
        if (d === SEED) {
          keySeed = await loadSeed(input.keyId, input.limits.budgetPeriod, input.now);
          continue;
        }
        if (d.status !== 'ok' || !project) return toAdmission(input.limits, d, reservationId);
        const p = decide(project.subject, project.limits, input, reservationId, projectSeed, true);
        if (p === SEED) {
          projectSeed = await loadSeed(project.subject, project.limits.budgetPeriod, input.now, project.id);
          continue;
        }
        if (p.status !== 'ok') return toAdmission(project.limits, p, reservationId, 'project');
        // Both levels fit and nothing awaited since the key was checked: reserve at the key too.
        const committed = decide(input.keyId, input.limits, input, reservationId, keySeed, true);
        if (committed === SEED || committed.status !== 'ok') throw new Error('counters: key decision changed within one turn'); // unreachable
        return toAdmission(input.limits, committed, reservationId);
      }
      throw new Error('counters: spend seed was not applied'); // unreachable: a seed is always applied
    },

    async settle(s: Settlement): Promise<SettleReceipt> {
      if (closed) throw new Error('counters: closed');
      checkNanos('costNanos', s.costNanos);
      if (!Number.isSafeInteger(s.tokens) || s.tokens < 0) throw new RangeError(`counters: tokens must be a non-negative integer, got ${s.tokens}`);
      if (s.ledger) {
        const at = Date.now();
        for (const [id, until] of settled) {
          if (until > at) break;
          settled.delete(id);
        }
        if (settled.has(s.ledger.id)) return { applied: false };
        settled.set(s.ledger.id, at + settledTtlMs);
      }
      settleSubject(s.keyId, s.budgetPeriod, s);
      if (s.project) settleSubject(projectSubject(s.project.id), s.project.budgetPeriod, s);
      return { applied: true };
    },

    async revoke(keyId) {
      revoked.add(keyId);
    },

    async forgetLedgerRecord() {
      // No stream: the embedded store is written directly.
    },

    async isRevoked(keyId) {
      return revoked.has(keyId);
    },

    async reset(keyId) {
      spend.delete(keyId);
      const st = states.get(keyId);
      if (!st) return;
      // In-flight reservations stay: they still hold money and slots until settled or expired.
      for (let i = st.head; i < st.window.length; i++) st.window[i].live = false;
      st.window = [];
      st.head = 0;
      st.windowTokens = 0;
      dropIfIdle(keyId, st);
    },

    async close() {
      closed = true;
      states.clear();
      settled.clear();
      spend.clear();
    },
  };
}
