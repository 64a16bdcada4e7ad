// Plain-text output for the terminal: aligned tables, readable numbers and exact money.

export interface Column {
  title: string;
  align?: 'left' | 'right';
}

/** An aligned table with a header row; cells are already strings. */
export function table(columns: Column[], rows: string[][]): string {
  const widths = columns.map((column, i) => Math.max(column.title.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (columns[i]!.align === 'right' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((column) => column.title)), ...rows.map(line)].join('\n');
}

/** 1234567 → "1,234,567". */
export function count(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 0 });
}

/**
 * USD with every nano-dollar kept but no trailing zeros past the cents: 0.005 → "$0.005",
 * 12.5 → "$12.50", 0.000123456 → "$0.000123456". Amounts arrive as nano-USD / 1e9, so
 * toFixed(9) recovers the exact integer of nanos.
 */
export function usd(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-';
  const negative = value < 0;
  let text = Math.abs(value).toFixed(9).replace(/0+$/, '');
  const [whole, fraction = ''] = text.split('.');
  text = `${Number(whole).toLocaleString('en-US')}.${fraction.padEnd(2, '0')}`;
  return `${negative ? '-' : ''}$${text}`;
}

export function orDash(value: unknown): string {
  return value === null || value === undefined || value === '' ? '-' : String(value);
}

/** "2026-11-22T03:00:00.000Z" → "2026-11-22 03:00:00Z". */
export function time(value: unknown): string {
  if (typeof value !== 'string' || value === '') return '-';
  return value.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
