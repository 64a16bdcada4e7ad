import type { PayloadRecord } from './payload-log-records.js';
import type { AttemptRecord } from '../job.js';
import type { AccessStore } from './access-records.js';

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
  /** Model ids or glob patterns (`svc/claude-*`) this key may use; null for every model. */
  allowedModels: string[] | null;
  /** After this time the key answers 401 like a revoked one; null for never. */
  expiresAt: string | null;
  /** The project whose budget and limits this key's requests also count against. */
  projectId: string | null;
  alerts: BudgetAlert[];
}

/** A budget threshold that fires a signed webhook once per budget period. */
export interface BudgetAlert {
  thresholdPercent: number;
  webhookUrl: string;
}

export interface ProjectRecord {
  id: string;
  name: string;
  budgetUsd: number | null;
  budgetPeriod: BudgetPeriod;
  rpm: number | null;
  tpm: number | null;
  alerts: BudgetAlert[];
  createdAt: string;
}

export type NewProject = Omit<ProjectRecord, 'createdAt'> & { createdAt: string };
export type ProjectPatch = Partial<Omit<ProjectRecord, 'id' | 'createdAt'>>;

/** One delivery of an alert: claimed once per subject, threshold, webhook and period. */
export interface AlertDelivery {
  id: string;
  subjectKind: 'key' | 'project';
  subjectId: string;
  thresholdPercent: number;
  webhookUrl: string;
  periodStart: string;
  /** pending | delivered | failed */
  status: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/** Refused requests (401 by a named key, 402, 403, 429), counted per day, key, model and status. */
export interface RefusedCount {
  day: string;
  keyId: string;
  model: string;
  status: number;
  count: number;
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
  allowedModels?: string[] | null;
  expiresAt?: string | null;
  projectId?: string | null;
  alerts?: BudgetAlert[];
  createdAt: string;
}

export type KeyPatch = Partial<Pick<KeyRecord, 'name' | 'budgetUsd' | 'budgetPeriod' | 'rpm' | 'tpm' | 'maxConcurrent' | 'allowedModels' | 'expiresAt' | 'projectId' | 'alerts'>>;

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
  /** The cache and reasoning split (subsets of prompt and completion tokens); 0 when none. Absent on records made before it existed. */
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  /** The 1-hour cache writes among cacheWriteTokens. */
  cacheWrite1hTokens?: number;
  reasoningTokens?: number;
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
  /** The split of the tokens above: cache reads and writes (the 1-hour writes among them) of prompt_tokens, reasoning of completion_tokens. */
  cache_read_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  reasoning_tokens: number;
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

/** Users, admin tokens and the audit log (migration 8) are the AccessStore part (access-records.ts). */
export interface Store extends AccessStore {
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
  // Governance (migration 6): projects, alert deliveries, refused-request counts, bulk import.
  createProject(project: NewProject): Promise<ProjectRecord>;
  getProject(id: string): Promise<ProjectRecord | null>;
  listProjects(): Promise<ProjectRecord[]>;
  updateProject(id: string, patch: ProjectPatch): Promise<ProjectRecord | null>;
  /** Deletes the project and detaches its keys; false when there was none. */
  deleteProject(id: string): Promise<boolean>;
  /** Ledger cost of the project's keys since a time (inclusive), in nano-USD. */
  projectSpentNanosSince(projectId: string, since: string): Promise<number>;
  /** Records an alert delivery unless one exists for the same subject, threshold, webhook and period: true when this call claimed it. */
  claimAlertDelivery(delivery: AlertDelivery): Promise<boolean>;
  updateAlertDelivery(id: string, fields: Pick<AlertDelivery, 'status' | 'attempts' | 'lastStatus' | 'lastError' | 'deliveredAt'>): Promise<void>;
  listAlertDeliveries(filter: { subjectId?: string; limit?: number }): Promise<AlertDelivery[]>;
  /** Adds counts (each row's count to the stored one). */
  addRefusedCounts(rows: RefusedCount[]): Promise<void>;
  /** Refused counts summed per key, model and status over whole days in [since, until]. */
  queryRefusedCounts(filter: { keyId?: string; since?: string; until?: string }): Promise<Array<Omit<RefusedCount, 'day'>>>;
  /** Writes a key exactly as given (secret hash, spend and revocation included), replacing one with the same id. */
  importKey(record: KeyRecord): Promise<void>;
  importProject(record: ProjectRecord): Promise<void>;
  /** Writes ledger records that are not there yet (by id), leaving key spend alone; then rebuild the rollups. */
  importLedger(entries: LedgerEntry[]): Promise<number>;
  /** Opt-in request logs (payload-log-records.ts): a key's setting, null when it follows the default. */
  setPayloadLogging(keyId: string, enabled: boolean | null): Promise<void>;
  payloadLogging(keyId: string): Promise<boolean | null>;
  savePayload(record: PayloadRecord): Promise<void>;
  getPayload(id: string): Promise<PayloadRecord | null>;
  /** Deletes logs created before `before` and the oldest beyond `maxTotalBytes`; returns how many. */
  purgePayloads(before: string, maxTotalBytes: number): Promise<number>;
  close(): Promise<void>;
}
