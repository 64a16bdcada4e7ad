import type { LedgerEntry } from './store.js';
import { LEDGER_COLUMNS } from './store-records.js';
import { SPLIT_COLUMNS } from './usage-split-migration.js';

// Ledger records of one event-loop turn go to PostgreSQL as ONE statement: the ledger rows, the
// keys' spend and the daily rollups, each summed per key and per (day, key, model) before they
// are applied. One record per statement was the largest cost of a scaled-out worker's request
// (BENCHMARKS.md, "Cost per stage"). Each caller's promise still resolves only once its record is
// committed.

const WIDTH = LEDGER_COLUMNS.split(',').length;
/** `attempts` is the 5th column, stored as jsonb. */
const JSONB_COLUMN = 4;
/** PostgreSQL takes at most 65,535 parameters per statement. */
export const MAX_BATCH = Math.floor(65_535 / WIDTH);

/**
 * The statement for `count` records. A ledger id already present (a retried settlement) is skipped
 * by the INSERT and so charges and counts nothing, as a single record's statement does; duplicate
 * ids within the batch count once.
 */
export function batchedLedgerSql(count: number): string {
  const rows: string[] = [];
  for (let row = 0; row < count; row += 1) {
    const cells: string[] = [];
    for (let column = 0; column < WIDTH; column += 1) cells.push(`$${row * WIDTH + column + 1}${column === JSONB_COLUMN ? '::jsonb' : ''}`);
    rows.push(`(${cells.join(', ')})`);
  }
  const sums = SPLIT_COLUMNS.map((column) => `sum(${column})`).join(', ');
  const additions = SPLIT_COLUMNS.map((column) => `${column} = d.${column} + EXCLUDED.${column}`).join(',\n         ');
  // Rollup rows are upserted in (key, model, day) order, so concurrent batches take their locks in
  // the same order; a deadlock on the keys' rows is still possible and makes the caller retry
  // record by record.
  return `WITH ins AS (
       INSERT INTO usage_ledger (${LEDGER_COLUMNS})
       VALUES ${rows.join(',\n         ')}
       ON CONFLICT (id) DO NOTHING
       RETURNING key_id, served_model, prompt_tokens, completion_tokens, cost_nanos, created_at, ${SPLIT_COLUMNS.join(', ')}
     ), spend AS (
       UPDATE api_keys k SET spent_nanos = k.spent_nanos + s.cost_nanos,
         last_used_at = GREATEST(k.last_used_at, s.created_at)
       FROM (SELECT key_id, sum(cost_nanos) AS cost_nanos, max(created_at) AS created_at FROM ins GROUP BY key_id) s
       WHERE k.id = s.key_id
       RETURNING k.id
     )
     INSERT INTO usage_daily AS d (day, key_id, model, requests, prompt_tokens, completion_tokens, cost_nanos, ${SPLIT_COLUMNS.join(', ')})
     SELECT (created_at AT TIME ZONE 'UTC')::date AS day, key_id, COALESCE(served_model, '') AS model, count(*),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_nanos), ${sums}
     FROM ins GROUP BY 1, 2, 3 ORDER BY 2, 3, 1
     ON CONFLICT (day, key_id, model) DO UPDATE SET requests = d.requests + EXCLUDED.requests,
       prompt_tokens = d.prompt_tokens + EXCLUDED.prompt_tokens,
       completion_tokens = d.completion_tokens + EXCLUDED.completion_tokens,
       cost_nanos = d.cost_nanos + EXCLUDED.cost_nanos,
       ${additions}`;
}

interface PendingRecord {
  entry: LedgerEntry;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Gathers the records of one event-loop turn and writes them with `writeMany`, or one by one if that fails. */
export class LedgerWriteBatcher {
  private pending: PendingRecord[] = [];
  private readonly writing = new Set<Promise<void>>();

  constructor(
    private readonly writeMany: (entries: LedgerEntry[]) => Promise<void>,
    private readonly writeOne: (entry: LedgerEntry) => Promise<void>,
  ) {}

  add(entry: LedgerEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ entry, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  /** Resolves once every record handed in so far has been written or refused. */
  async drain(): Promise<void> {
    this.flush();
    await Promise.all(this.writing);
  }

  private flush(): void {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      const writing: Promise<void> = this.write(batch).finally(() => this.writing.delete(writing));
      this.writing.add(writing);
    }
  }

  private async write(batch: PendingRecord[]): Promise<void> {
    if (batch.length > 1) {
      try {
        await this.writeMany(batch.map((record) => record.entry));
        for (const record of batch) record.resolve();
        return;
      } catch {
        // One bad record, or a deadlock with another batch, must not fail its neighbours: each is
        // written on its own, and a record the batch did commit is skipped by its ledger id.
      }
    }
    await Promise.all(batch.map((record) => this.writeOne(record.entry).then(record.resolve, record.reject)));
  }
}
