// Display helpers shared by the pages.

const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 });
const smallMoney = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 });
const whole = new Intl.NumberFormat('en-US');
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const dateTimeFormat = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const dateFormat = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: 'short', day: 'numeric' });
const relativeFormat = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

export function usd(value) {
  if (value === null || value === undefined) return '—';
  return Math.abs(value) >= 1 || value === 0 ? money.format(value) : smallMoney.format(value);
}

export const count = (value) => whole.format(value ?? 0);
export const shortCount = (value) => compact.format(value ?? 0);

export function dateTime(iso) {
  return iso ? dateTimeFormat.format(new Date(iso)) : '—';
}

export function date(iso) {
  return iso ? dateFormat.format(new Date(iso)) : '—';
}

export function ago(iso, now = Date.now()) {
  if (!iso) return 'Never';
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const steps = [[60, 'second'], [3600, 'minute'], [86400, 'hour'], [604800, 'day'], [2629800, 'week'], [31557600, 'month'], [Infinity, 'year']];
  let unit = 1;
  for (const [limit, name] of steps) {
    if (Math.abs(seconds) < limit) return relativeFormat.format(Math.round(seconds / unit), name);
    unit = limit;
  }
  return dateTime(iso);
}

export const periodNames = { none: 'in total', daily: 'per day', weekly: 'per week', monthly: 'per month' };

/** Start of the budget period containing now, as the gateway counts it (UTC; weeks start on Monday). */
export function periodStart(period, now = Date.now()) {
  const day = new Date(now);
  const midnight = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate());
  if (period === 'daily') return new Date(midnight).toISOString();
  if (period === 'weekly') return new Date(midnight - ((day.getUTCDay() + 6) % 7) * 86400000).toISOString();
  if (period === 'monthly') return new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), 1)).toISOString();
  return new Date(0).toISOString();
}

/** YYYY-MM-DD of a Date in UTC. */
export function isoDay(value) {
  return value.toISOString().slice(0, 10);
}
