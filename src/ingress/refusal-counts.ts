import type { Logger } from 'pino';
import { GatewayError, type ErrorCode } from '../shared/errors.js';
import { parseApiKey } from '../shared/keys/api-key.js';
import type { RefusedCount, Store } from '../shared/store/store.js';
import type { KeyDirectory } from './key-directory.js';

// Refused traffic made visible without a ledger row per refusal: each ingress counts its refusals
// in memory per day, key, model and status, and adds the counts to the store's refused_requests
// table once a second (one upsert per distinct row, however many refusals it sums). A refusal flood
// therefore costs the store a bounded number of writes. Counts of the last second of a process that
// dies uncleanly are lost; drain() flushes them on a graceful stop.

/** The refusals that are counted: admission's answers, not upstream failures. */
const COUNTED: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['invalid_api_key', 'budget_exceeded', 'model_not_allowed', 'rate_limit_exceeded']);

export class RefusalCounts {
  private pending = new Map<string, RefusedCount>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly store: Store, private readonly logger: Logger, flushMs = 1000) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  record(keyId: string, model: string, status: number, now = Date.now()): void {
    const day = new Date(now).toISOString().slice(0, 10);
    const id = `${day}\u0000${keyId}\u0000${model}\u0000${status}`;
    const row = this.pending.get(id);
    if (row) row.count += 1;
    else this.pending.set(id, { day, keyId, model, status, count: 1 });
  }

  /** Writes what was counted since the last flush; failed writes are kept for the next one. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const rows = [...this.pending.values()];
      this.pending = new Map();
      try {
        await this.store.addRefusedCounts(rows);
      } catch (error) {
        for (const row of rows) {
          const id = `${row.day}\u0000${row.keyId}\u0000${row.model}\u0000${row.status}`;
          const later = this.pending.get(id);
          if (later) later.count += row.count;
          else this.pending.set(id, row);
        }
        this.logger.warn({ err: error }, 'could not write refused-request counts; keeping them for the next try');
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/**
 * Counts `error` when it is a counted refusal. A 401 counts against the key the credential named
 * (its public id found a key record, e.g. a revoked or expired key, or a wrong secret); a 401 for no
 * known key is not counted, since there is no key to show it for.
 */
export async function noteRefusal(counts: RefusalCounts | undefined, error: unknown, who: { keys: KeyDirectory; credential: string; keyId?: string; model?: string }): Promise<void> {
  if (!counts || !(error instanceof GatewayError) || !COUNTED.has(error.code)) return;
  let keyId = who.keyId;
  if (keyId === undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(who.credential);
    const parsed = match ? parseApiKey(match[1]!) : undefined;
    const record = parsed ? await who.keys.lookup(parsed.publicId).catch(() => null) : null;
    if (!record) return;
    keyId = record.id;
  }
  counts.record(keyId, who.model ?? '', error.status);
}
