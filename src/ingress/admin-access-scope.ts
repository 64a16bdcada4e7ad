import type { Principal } from '../shared/access/principal.js';
import type { KeyRecord, LedgerEntry, Store, UsageFilter, UsageRow } from '../shared/store/store.js';
import { insufficientRole } from './admin-access.js';

// A member sees and changes only the keys (and their usage) of the projects they belong to;
// admins and viewers see everything. Every admin action that reads or changes keys, usage,
// projects or alerts narrows its answer through these.

export function isMember(actor: Principal): boolean {
  return actor.role === 'member';
}

export function projectInScope(actor: Principal, projectId: string | null): boolean {
  return !isMember(actor) || (projectId !== null && actor.projects.includes(projectId));
}

export function keyInScope(actor: Principal, key: Pick<KeyRecord, 'projectId'>): boolean {
  return projectInScope(actor, key.projectId);
}

function outsideProjects(keyId: string) {
  return insufficientRole(`Key '${keyId}' is not in one of your projects.`);
}

export function requireKeyInScope(actor: Principal, key: KeyRecord): void {
  if (!keyInScope(actor, key)) throw outsideProjects(key.id);
}

export function requireProjectInScope(actor: Principal, projectId: string | null, what = 'This project'): void {
  if (projectInScope(actor, projectId)) return;
  throw insufficientRole(projectId === null
    ? 'As a member, keep keys in one of your projects: set project_id to one of them.'
    : `${what} ('${projectId}') is not one of your projects.`);
}

/** The ids of the keys the actor may see; null for every key. */
export async function visibleKeyIds(store: Store, actor: Principal): Promise<Set<string> | null> {
  if (!isMember(actor)) return null;
  return new Set((await store.listKeys()).filter((key) => keyInScope(actor, key)).map((key) => key.id));
}

const totals = ['requests', 'prompt_tokens', 'completion_tokens', 'cost_usd', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens'] as const;
const groupField = { key: 'key_id', model: 'model', day: 'day' } as const;

/** Usage over the actor's keys: the store's answer for one key, or its per-key answers summed per group. */
export async function scopedUsage(store: Store, actor: Principal, filter: UsageFilter): Promise<UsageRow[]> {
  const ids = await visibleKeyIds(store, actor);
  if (ids === null) return store.queryUsage(filter);
  if (filter.keyId !== undefined) {
    if (!ids.has(filter.keyId)) throw outsideProjects(filter.keyId);
    return store.queryUsage(filter);
  }
  const field = filter.groupBy ? groupField[filter.groupBy] : undefined;
  const merged = new Map<string | null, UsageRow>();
  if (!field) merged.set(null, Object.fromEntries(totals.map((total) => [total, 0])) as unknown as UsageRow);
  for (const id of ids) {
    for (const row of await store.queryUsage({ ...filter, keyId: id })) {
      const group = field ? ((row[field] as string | null | undefined) ?? null) : null;
      const into = merged.get(group);
      if (!into) { merged.set(group, { ...row }); continue; }
      for (const total of totals) into[total] += row[total];
    }
  }
  // The store's order: by group value in code-point order, rows without one (unserved requests) last.
  return [...merged.entries()].sort(([a], [b]) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1)).map(([, row]) => row);
}

/** The newest ledger records of the actor's keys, at most `limit` (the store's default 100). */
export async function scopedLedger(store: Store, actor: Principal, filter: UsageFilter & { limit?: number }): Promise<LedgerEntry[]> {
  const ids = await visibleKeyIds(store, actor);
  if (ids === null) return store.listLedger(filter);
  if (filter.keyId !== undefined) {
    if (!ids.has(filter.keyId)) throw outsideProjects(filter.keyId);
    return store.listLedger(filter);
  }
  const pages = await Promise.all([...ids].map((keyId) => store.listLedger({ ...filter, keyId })));
  const newestFirst = (a: LedgerEntry, b: LedgerEntry) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1);
  return pages.flat().sort(newestFirst).slice(0, filter.limit ?? 100);
}
