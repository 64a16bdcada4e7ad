import type { PayloadRecord } from './payload-log-records.js';
import type { AttemptRecord } from '../job.js';

export type BudgetPeriod = 'none' | 'daily' | 'weekly' | 'monthly';

export interface KeyRecord {
  id: string;
  name: string;
  publicId: string;
  secretHash: string;
  keyHint: string;
  budgetUsd: number | null;
  budgetPeriod: BudgetPeriod;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  /** All-time spend, kept in step with the ledger (same transaction). */
  spentUsd: number;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface NewKey {
  id: string;
  name: string;
  publicId: string;
  secretHash: string;
  keyHint: string;
  budgetUsd?: number | null;
  budgetPeriod?: BudgetPeriod;
  rpm?: number | null;
  tpm?: number | null;
  maxConcurrent?: number | null;
  createdAt: string;
}

export type KeyPatch = Partial<Pick<KeyRecord, 'name' | 'budgetUsd' | 'budgetPeriod' | 'rpm' | 'tpm' | 'maxConcurrent'>>;

export interface LedgerEntry {
  id: string;
  keyId: string;
  requestedModel: string;
  servedModel: string | null;
  attempts: AttemptRecord[];
  promptTokens: number;
  completionTokens: number;
  /** Cost in nano-USD (1e-9), an integer so sums are exact. */
  costNanos: number;
  status: number;
  latencyMs: number;
  estimated: boolean;
  stream: boolean;
  createdAt: string;
}

export interface UsageFilter {
  keyId?: string;
  model?: string;
  since?: string;
  until?: string;
  groupBy?: 'key' | 'model' | 'day';
}

export interface UsageRow {
  key_id?: string;
  model?: string;
  day?: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
}

/** A response of the Responses API kept for retrieval and for continuing its conversation. */
export interface StoredResponse {
  /** `resp_...`, as clients see it. */
  id: string;
  /** Only this key may read, continue, cancel or delete it. */
  keyId: string;
  /** queued | in_progress | completed | failed | cancelled | incomplete */
  status: string;
  background: boolean;
  /** The response object as clients see it. */
  response: Record<string, unknown>;
  /** The input items of this request. */
  inputItems: Array<Record<string, unknown>>;
  /** The items before them (an earlier response's context and output), for previous_response_id. */
  contextItems: Array<Record<string, unknown>>;
  createdAt: string;
  /** After this time the response is gone for readers and purged. */
  expiresAt: string;
}

export interface Store {
  /** Creates tables and indexes; safe when several processes start at once. */
  migrate(): Promise<void>;
  createKey(key: NewKey): Promise<KeyRecord>;
  getKey(id: string): Promise<KeyRecord | null>;
  getKeyByPublicId(publicId: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | null>;
  revokeKey(id: string, at: string): Promise<KeyRecord | null>;
  /** Appends a ledger record and adds its cost to the key's spend, atomically. */
  recordUsage(entry: LedgerEntry): Promise<void>;
  /** Sum of ledger cost for a key since a time (inclusive), in nano-USD (rollup-backed, so cheap at period starts). */
  spentNanosSince(keyId: string, since: string): Promise<number>;
  /** Totals (optionally grouped) from the daily rollup plus the partial days at the edges. */
  queryUsage(filter: UsageFilter): Promise<UsageRow[]>;
  /** Recomputes the daily usage rollup from the ledger (after a bulk import or a hand correction of the ledger). */
  rebuildUsageRollups(): Promise<void>;
  listLedger(filter: UsageFilter & { limit?: number }): Promise<LedgerEntry[]>;
  /** Records a dashboard sign-out; the session stays ended until `expiresAt` (ISO 8601), when it would have expired anyway. */
  endDashboardSession(id: string, expiresAt: string): Promise<void>;
  /** Whether a dashboard session was signed out (rows may be swept once the session has expired). */
  isDashboardSessionEnded(id: string): Promise<boolean>;
  /**
   * Inserts or replaces a stored response of the same key. With `onlyIfUnfinished`, an existing one
   * is replaced only while queued or in progress (a cancellation is never overwritten). True when written.
   */
  saveResponse(record: StoredResponse, options?: { onlyIfUnfinished?: boolean }): Promise<boolean>;
  /** The key's unexpired response, or null (another key's response is null too). */
  getResponse(id: string, keyId: string, now?: string): Promise<StoredResponse | null>;
  deleteResponse(id: string, keyId: string): Promise<boolean>;
  /** Deletes responses that expired before `now`; returns how many. */
  purgeResponses(now: string): Promise<number>;
  /** Opt-in request logs (payload-log-records.ts): a key's setting, null when it follows the default. */
  setPayloadLogging(keyId: string, enabled: boolean | null): Promise<void>;
  payloadLogging(keyId: string): Promise<boolean | null>;
  savePayload(record: PayloadRecord): Promise<void>;
  getPayload(id: string): Promise<PayloadRecord | null>;
  /** Deletes logs created before `before` and the oldest beyond `maxTotalBytes`; returns how many. */
  purgePayloads(before: string, maxTotalBytes: number): Promise<number>;
  close(): Promise<void>;
}
