import type { BudgetPeriod } from '../store/store.js';

// Budget period boundaries, shared by the memory and Redis counters so both agree on which
// period a request belongs to. All boundaries are UTC: daily at 00:00, weekly on Monday 00:00,
// monthly on the 1st at 00:00. 'none' is one endless period starting at the epoch, so the same
// "spend since periodStart" question works for all-time budgets too.

const DAY_MS = 86_400_000;

/** Start and end of the period containing `now`, in ms since the epoch; end is null for 'none'. */
export function periodBoundsMs(period: BudgetPeriod, now: number): { start: number; end: number | null } {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const midnight = Date.UTC(y, m, d.getUTCDate());
  switch (period) {
    case 'none':
      return { start: 0, end: null };
    case 'daily':
      return { start: midnight, end: midnight + DAY_MS };
    case 'weekly': {
      // getUTCDay() is 0 on Sunday; weeks start on Monday, so Sunday is 6 days in.
      const start = midnight - ((d.getUTCDay() + 6) % 7) * DAY_MS;
      return { start, end: start + 7 * DAY_MS };
    }
    case 'monthly':
      // Date.UTC rolls month 12 over into January of the next year.
      return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
    default: {
      const unknown: never = period;
      throw new RangeError(`unknown budget period: ${String(unknown)}`);
    }
  }
}

/** ISO start of the period containing `now` ('1970-01-01T00:00:00.000Z' for 'none'). */
export function periodStart(period: BudgetPeriod, now: number): string {
  return new Date(periodBoundsMs(period, now).start).toISOString();
}

/** ISO end (exclusive) of the period containing `now`, or null for 'none', which never ends. */
export function periodEnd(period: BudgetPeriod, now: number): string | null {
  const { end } = periodBoundsMs(period, now);
  return end === null ? null : new Date(end).toISOString();
}
