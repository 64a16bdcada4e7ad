import type { Redis } from 'ioredis';
import type { LedgerEntry } from '../store/store.js';

// The durable half of the scaled-out ledger. The settle script (lua/settle.lua) appends each
// request's ledger record to one Redis stream in the same atomic step that adds its cost to the
// key's spend, so the record exists as soon as the money is counted. The settler then writes it
// to the store and removes it here; when that write fails (store unreachable, process killed),
// the record stays, and a LedgerStreamConsumer writes it later. Store writes are idempotent by
// ledger id, so a record written twice (settler and consumer racing) is charged once.
//
// Records survive a Redis restart only with persistence on (appendonly yes): docs/scale-out.md.

/** Field of a stream entry holding the record. */
const FIELD = 'e';

export function ledgerStreamKey(countersKeyPrefix: string): string {
  return `${countersKeyPrefix}ledger`;
}

export function encodeLedgerRecord(entry: LedgerEntry): string {
  return JSON.stringify(entry);
}

export interface PendingRecord {
  streamId: string;
  entry: LedgerEntry;
}

/** Milliseconds part of a stream id ("<ms>-<seq>"): when Redis appended the record. */
export function appendedAt(streamId: string): number {
  return Number(streamId.slice(0, streamId.indexOf('-')));
}

export class LedgerStream {
  constructor(
    private readonly redis: Redis,
    readonly key: string,
  ) {}

  /** The oldest pending records appended at or before `beforeMs` (Redis clock), oldest first. */
  async pendingBefore(beforeMs: number, count: number): Promise<PendingRecord[]> {
    const rows = await this.redis.xrange(this.key, '-', String(Math.max(0, Math.floor(beforeMs))), 'COUNT', count);
    return rows.flatMap(([streamId, fields]) => {
      const at = fields.indexOf(FIELD);
      const raw = at >= 0 ? fields[at + 1] : undefined;
      return raw === undefined ? [] : [{ streamId, entry: JSON.parse(raw) as LedgerEntry }];
    });
  }

  /** Forgets records that are in the store now. */
  async remove(streamIds: string[]): Promise<void> {
    if (streamIds.length > 0) await this.redis.xdel(this.key, ...streamIds);
  }

  /**
   * Cost of the key's pending records created at or after `since`: spend that the store does not
   * show yet. Read before the store, so a record moved meanwhile is counted twice (too much, for
   * a moment) rather than not at all (past the budget).
   */
  async pendingNanos(keyId: string, since: string): Promise<number> {
    const from = Date.parse(since);
    let total = 0;
    for (const { entry } of await this.pendingBefore(Number.MAX_SAFE_INTEGER, 100_000)) {
      if (entry.keyId === keyId && Date.parse(entry.createdAt) >= from) total += entry.costNanos;
    }
    return total;
  }
}
