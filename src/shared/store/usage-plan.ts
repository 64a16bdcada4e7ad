import type { UsageFilter } from './store.js';

// How a usage question is answered without reading millions of ledger rows. Both stores keep a
// daily rollup (one row per UTC day, key and served model, updated in the same transaction as the
// ledger row), so whole days inside [since, until) come from the rollup and only the partial days
// at the edges are read from the ledger itself, through its (key_id | served_model, created_at)
// and (created_at) indexes. A question that never covers a whole day reads only the ledger.

export interface TimeRange {
  /** Inclusive ISO 8601 UTC start; absent for "from the beginning". */
  since?: string;
  /** Exclusive ISO 8601 UTC end; absent for "until now". */
  until?: string;
}

export interface UsagePlan {
  /** Whole UTC days to read from the rollup, as YYYY-MM-DD: fromDay inclusive, toDay exclusive. Null: none. */
  rollup: { fromDay?: string; toDay?: string } | null;
  /** Partial days to read from the ledger. */
  ledger: TimeRange[];
}

const DAY_MS = 86_400_000;

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const iso = (ms: number): string => new Date(ms).toISOString();

export function toIsoTime(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not an ISO 8601 time: ${value}`);
  return new Date(ms).toISOString();
}

export function planUsage(filter: Pick<UsageFilter, 'since' | 'until'>): UsagePlan {
  const since = filter.since === undefined ? undefined : Date.parse(toIsoTime(filter.since));
  const until = filter.until === undefined ? undefined : Date.parse(toIsoTime(filter.until));
  // The first whole day starts at the first midnight at or after `since`; whole days end at the
  // last midnight at or before `until`.
  const firstWhole = since === undefined ? undefined : Math.ceil(since / DAY_MS) * DAY_MS;
  const endWhole = until === undefined ? undefined : Math.floor(until / DAY_MS) * DAY_MS;
  if (firstWhole !== undefined && endWhole !== undefined && firstWhole >= endWhole) {
    // Less than one whole day: the ledger alone (an empty range when since >= until).
    return { rollup: null, ledger: [{ since: iso(since!), until: iso(until!) }] };
  }
  const ledger: TimeRange[] = [];
  if (since !== undefined && firstWhole !== since) ledger.push({ since: iso(since), until: iso(firstWhole!) });
  if (until !== undefined && endWhole !== until) ledger.push({ since: iso(endWhole!), until: iso(until) });
  return {
    rollup: { fromDay: firstWhole === undefined ? undefined : dayOf(firstWhole), toDay: endWhole === undefined ? undefined : dayOf(endWhole) },
    ledger,
  };
}
