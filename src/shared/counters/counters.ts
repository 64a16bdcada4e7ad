import type { BudgetPeriod, LedgerEntry } from '../store/store.js';

// Admission counters: revocation, rate limits (rpm, tpm, concurrency) and budget reservations.
// In memory for the embedded default, in Redis (one atomic Lua call per admission) when scaled
// out, so limits hold across every ingress instance. Both pass test/counters-conformance.test.ts.

export interface KeyLimits {
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  /** Budget per period in nano-USD; null for none. */
  budgetNanos: number | null;
  budgetPeriod: BudgetPeriod;
}

export interface AdmissionInput {
  keyId: string;
  requestId: string;
  limits: KeyLimits;
  /** Tokens this request may use (prompt plus output ceiling, times n), for the tpm window. */
  tokens: number;
  /** Upper bound of the request's cost in nano-USD, reserved against the budget. */
  reserveNanos: number;
  /** Milliseconds since the epoch; tests pass their own clock. */
  now: number;
  /**
   * The key's project: its limits (budget, rpm, tpm; maxConcurrent is ignored) must hold too, and the
   * same reservation is made at both levels in the same atomic step, or at neither.
   */
  project?: { id: string; limits: KeyLimits };
}

/** The project a request's reservation was also made against, as settlement needs it. */
export interface ProjectCharge {
  id: string;
  budgetPeriod: BudgetPeriod;
}

/** What the OpenAI-style x-ratelimit-* headers report. Fields are null where no limit is set. */
export interface RateLimitState {
  limitRequests: number | null;
  remainingRequests: number | null;
  resetRequestsSeconds: number | null;
  limitTokens: number | null;
  remainingTokens: number | null;
  resetTokensSeconds: number | null;
}

export type Admission =
  | { ok: true; reservationId: string; rateLimit: RateLimitState }
  | {
    ok: false;
    reason: 'revoked' | 'rate_limited' | 'budget_exceeded' | 'concurrency';
    /** Whose limit refused it: the key's, or its project's (rateLimit then reports the project's limits). */
    level: 'key' | 'project';
    retryAfterSeconds?: number;
    /** A budget refusal that only requests in flight cause: it fits once they settle what they do not spend. */
    heldInFlight?: true;
    rateLimit: RateLimitState;
  };

export interface Settlement {
  keyId: string;
  reservationId: string;
  /** What the request really cost, in nano-USD; spend grows by this and the reservation is released. */
  costNanos: number;
  /** Tokens really used, to correct the tpm window's estimate. */
  tokens: number;
  budgetPeriod: BudgetPeriod;
  now: number;
  /** The project the admission also reserved against: released and charged the same way. */
  project?: ProjectCharge;
  /**
   * The request's ledger record, on a final settlement (not on the release of a job that never
   * ran). A request is settled at most once per ledger id, whoever settles it (its worker, or the
   * ingress that billed a lost worker's stream by estimate). Redis counters also append the record
   * to the ledger stream in the same atomic step, so the money survives a store outage or a crash
   * between settling and writing the ledger (see ledger-stream.ts).
   */
  ledger?: LedgerEntry;
}

export interface SettleReceipt {
  /** False when this ledger id was settled before: nothing changed. Always true without a ledger record. */
  applied: boolean;
  /** Id of the record in the Redis ledger stream; absent where the caller writes the ledger itself (memory counters). */
  streamId?: string;
}

/** Where counters read a key's (or a project's) spend for the current period when they have none yet (the ledger). */
export type SpendSource = (keyId: string, periodStart: string) => Promise<number>;

export interface Counters {
  admit(input: AdmissionInput): Promise<Admission>;
  settle(settlement: Settlement): Promise<SettleReceipt>;
  /** Marks a key revoked everywhere at once. */
  revoke(keyId: string): Promise<void>;
  /**
   * The store now holds the ledger record a settlement appended to the Redis ledger stream
   * (SettleReceipt.streamId): drop it there. A no-op where there is no stream.
   */
  forgetLedgerRecord(streamId: string): Promise<void>;
  /** Whether the key is revoked: one cheap read, for workers about to start a queued job. */
  isRevoked(keyId: string): Promise<boolean>;
  /** Forgets cached spend and windows for a key (after its budget or limits change). */
  reset(keyId: string): Promise<void>;
  close(): Promise<void>;
}
