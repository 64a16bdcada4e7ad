import { describe, expect, it } from 'vitest';
import { hashAdminToken } from '../../src/shared/access/admin-token-secret.js';
import { SubjectConflictError, UserExistsError } from '../../src/shared/store/access-records.js';
import type { Store } from '../../src/shared/store/store.js';

// The users, admin tokens and audit log part of test/store-conformance.test.ts (migration 8),
// run against every store there. `open` gives a store on a new, empty database; `raw` runs SQL
// on that database directly.

/** Lists are oldest first, and records made in the same millisecond are in id order. */
const byAge = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1);

export function accessStoreConformance(fresh: () => Promise<{ store: Store; raw: (sql: string) => Promise<void> }>): void {
  describe('users, admin tokens and the audit log (migration 8)', () => {
    it('creates, reads, lists and patches users; emails are unique among users not removed', async () => {
      const { store } = await fresh();
      const a = await store.createUser({ email: ' Ana@Example.com ', name: 'Ana', role: 'member', projects: ['proj_1'] });
      expect(a).toMatchObject({ email: 'ana@example.com', name: 'Ana', role: 'member', projects: ['proj_1'], subject: null, removedAt: null, sessionsValidAfter: null });
      expect(a.id).toMatch(/^usr_/);
      const b = await store.createUser({ email: 'bo@example.com', role: 'viewer' });
      expect(b).toMatchObject({ name: null, projects: [] });
      await expect(store.createUser({ email: 'ANA@example.com', role: 'admin' })).rejects.toBeInstanceOf(UserExistsError);
      expect(await store.getUser(a.id)).toEqual(a);
      expect(await store.getUser('usr_missing')).toBeNull();
      // Oldest first; two users made in the same millisecond are in id order.
      expect(await store.listUsers()).toEqual([a, b].sort(byAge));
      const patched = await store.updateUser(a.id, { role: 'admin', projects: [] });
      expect(patched).toEqual({ ...a, role: 'admin', projects: [] });
      expect(await store.updateUser(a.id, {})).toEqual(patched);
      await expect(store.updateUser(b.id, { email: 'ana@example.com' })).rejects.toBeInstanceOf(UserExistsError);
      expect(await store.updateUser('usr_missing', { role: 'admin' })).toBeNull();
    });

    it('removes a user: sessions ended, tokens revoked, email free again, no further patches', async () => {
      const { store } = await fresh();
      const user = await store.createUser({ email: 'gone@example.com', role: 'admin' });
      const { record, secret } = await store.createAdminToken({ userId: user.id, name: 'ci' });
      const removed = await store.removeUser(user.id);
      expect(removed?.removedAt).toEqual(expect.any(String));
      expect(removed?.sessionsValidAfter).toEqual(expect.any(String));
      expect(await store.findAdminTokenBySecretHash(hashAdminToken(secret))).toBeNull();
      expect((await store.getAdminToken(record.id))?.revokedAt).toEqual(expect.any(String));
      expect(await store.updateUser(user.id, { role: 'viewer' })).toBeNull();
      expect(await store.removeUser('usr_missing')).toBeNull();
      const again = await store.createUser({ email: 'gone@example.com', role: 'viewer' });
      expect(again.id).not.toBe(user.id);
      // Removing twice keeps the first removal time.
      expect((await store.removeUser(user.id))?.removedAt).toBe(removed?.removedAt);
    });

    it('ends a user\'s sessions by moving sessions_valid_after forward', async () => {
      const { store } = await fresh();
      const user = await store.createUser({ email: 'ses@example.com', role: 'viewer' });
      const before = new Date().toISOString();
      const ended = await store.endUserSessions(user.id);
      expect(ended!.sessionsValidAfter! >= before).toBe(true);
      expect(ended?.removedAt).toBeNull();
      expect(await store.endUserSessions('usr_missing')).toBeNull();
    });

    it('signs users in by subject, then email (linking it), else creates a viewer; a claimed role overwrites', async () => {
      const { store } = await fresh();
      const fresh1 = await store.upsertUserFromSignIn({ subject: 'https://idp|1', email: 'New@Example.com', name: 'New' });
      expect(fresh1).toMatchObject({ email: 'new@example.com', role: 'viewer', subject: 'https://idp|1', name: 'New' });
      expect(await store.upsertUserFromSignIn({ subject: 'https://idp|1', email: 'changed@example.com' })).toEqual(fresh1);
      const invited = await store.createUser({ email: 'inv@example.com', role: 'member', projects: ['proj_a'] });
      const linked = await store.upsertUserFromSignIn({ subject: 'https://idp|2', email: 'INV@example.com' });
      expect(linked).toEqual({ ...invited, subject: 'https://idp|2' });
      const promoted = await store.upsertUserFromSignIn({ subject: 'https://idp|2', email: 'inv@example.com', role: 'admin' });
      expect(promoted).toEqual({ ...linked, role: 'admin' });
      expect(await store.upsertUserFromSignIn({ subject: 'https://idp|3', email: 'new2@example.com', role: 'member' })).toMatchObject({ role: 'member' });
      // Another subject claiming a linked user's email does not take the account over.
      await expect(store.upsertUserFromSignIn({ subject: 'https://idp|9', email: 'inv@example.com' })).rejects.toBeInstanceOf(SubjectConflictError);
      expect(await store.listUsers()).toHaveLength(3);
    });

    it('does not revive a removed user at sign-in, by subject or by email', async () => {
      const { store } = await fresh();
      const user = await store.upsertUserFromSignIn({ subject: 'iss|1', email: 'out@example.com' });
      await store.removeUser(user.id);
      const bySubject = await store.upsertUserFromSignIn({ subject: 'iss|1', email: 'other@example.com', role: 'admin' });
      expect(bySubject).toMatchObject({ id: user.id, role: 'viewer' });
      expect(bySubject.removedAt).not.toBeNull();
      const byEmail = await store.upsertUserFromSignIn({ subject: 'iss|2', email: 'out@example.com' });
      expect(byEmail).toMatchObject({ id: user.id });
      expect(byEmail.removedAt).not.toBeNull();
      expect(await store.listUsers()).toHaveLength(1);
    });

    it('creates admin tokens shown once, stores only their hash, finds them by hash until revoked', async () => {
      const { store } = await fresh();
      const user = await store.createUser({ email: 'tok@example.com', role: 'viewer' });
      const other = await store.createUser({ email: 'tok2@example.com', role: 'viewer' });
      const { record, secret } = await store.createAdminToken({ userId: user.id, name: 'deploy bot' });
      expect(secret).toMatch(/^sbat_[A-Za-z0-9_-]{43}$/);
      expect(record).toMatchObject({ userId: user.id, name: 'deploy bot', revokedAt: null, hint: `sbat_...${secret.slice(-4)}` });
      expect(record.id).toMatch(/^atk_/);
      expect(JSON.stringify(record)).not.toContain(secret);
      const second = await store.createAdminToken({ userId: other.id, name: 'other' });
      expect(await store.findAdminTokenBySecretHash(hashAdminToken(secret))).toEqual(record);
      expect(await store.findAdminTokenBySecretHash(hashAdminToken('sbat_wrong'))).toBeNull();
      // Oldest first; two tokens made in the same millisecond are in id order.
      expect(await store.listAdminTokens()).toEqual([record, second.record].sort(byAge));
      expect(await store.listAdminTokens(user.id)).toEqual([record]);
      const revoked = await store.revokeAdminToken(record.id);
      expect(revoked?.revokedAt).toEqual(expect.any(String));
      expect((await store.revokeAdminToken(record.id))?.revokedAt).toBe(revoked?.revokedAt);
      expect(await store.findAdminTokenBySecretHash(hashAdminToken(secret))).toBeNull();
      expect(await store.revokeAdminToken('atk_missing')).toBeNull();
      expect(await store.getAdminToken('atk_missing')).toBeNull();
    });

    it('appends audit entries and queries them newest first, filtered and paged', async () => {
      const { store } = await fresh();
      const base = { actorKind: 'user' as const, actorId: 'usr_1', actorLabel: 'ana@example.com', client: '203.0.113.7' };
      const created = await store.appendAudit({ ...base, action: 'key.created', targetType: 'key', targetId: 'key_1', changes: { name: { to: 'ci' } }, at: '2026-11-22T10:00:00Z' });
      expect(created).toMatchObject({ at: '2026-11-22T10:00:00.000Z', outcome: 'success', changes: { name: { to: 'ci' } }, targetType: 'key' });
      expect(created.id).toMatch(/^aud_/);
      const updated = await store.appendAudit({ ...base, action: 'key.updated', targetType: 'key', targetId: 'key_1', changes: { rpm: { from: null, to: 5 } }, at: '2026-11-22T11:00:00Z' });
      const byRoot = await store.appendAudit({ actorKind: 'root', actorId: 'root', actorLabel: 'admin token', client: '::1', action: 'project.created', targetType: 'project', targetId: 'proj_1', at: '2026-11-22T12:00:00Z' });
      const failed = await store.appendAudit({ actorKind: 'anonymous', actorId: 'unknown', actorLabel: 'x@example.com', client: '::1', action: 'session.sign_in_failed', outcome: 'failure', at: '2026-11-22T12:00:00Z' });
      expect(failed).toMatchObject({ targetType: null, targetId: null, changes: null, outcome: 'failure' });
      const all = await store.queryAudit({});
      expect(all.map((e) => e.id)).toEqual([...[byRoot.id, failed.id].sort().reverse(), updated.id, created.id]);
      expect(all.find((e) => e.id === updated.id)).toEqual(updated);
      expect(await store.queryAudit({ actor: 'usr_1' })).toEqual([updated, created]);
      expect(await store.queryAudit({ actor: 'ana@example.com' })).toEqual([updated, created]);
      expect(await store.queryAudit({ action: 'key.created' })).toEqual([created]);
      expect(await store.queryAudit({ action: 'key.*' })).toEqual([updated, created]);
      expect(await store.queryAudit({ action: 'key' })).toEqual([updated, created]);
      expect(await store.queryAudit({ action: 'ke' })).toEqual([]);
      expect(await store.queryAudit({ targetId: 'proj_1' })).toEqual([byRoot]);
      expect(await store.queryAudit({ since: '2026-11-22T11:00:00Z', until: '2026-11-22T12:00:00Z' })).toEqual([updated]);
      const page1 = await store.queryAudit({ limit: 2 });
      expect(page1).toEqual(all.slice(0, 2));
      expect(await store.queryAudit({ limit: 2, before: page1[1]!.id })).toEqual(all.slice(2, 4));
      expect(await store.queryAudit({ before: created.id })).toEqual([]);
      expect(await store.queryAudit({ before: 'aud_missing' })).toEqual([]);
    });

    it('exports and imports users, tokens (with their hash) and audit entries idempotently, for migrate', async () => {
      const { store: source } = await fresh();
      const { store: target } = await fresh();
      const kept = await source.createUser({ email: 'kept@example.com', role: 'member', projects: ['p1'] });
      const gone = await source.upsertUserFromSignIn({ subject: 'iss|x', email: 'gone@example.com' });
      const { secret } = await source.createAdminToken({ userId: kept.id, name: 'kept token' });
      await source.removeUser(gone.id);
      const entry = await source.appendAudit({ actorKind: 'root', actorId: 'root', actorLabel: 'admin token', client: '::1', action: 'user.created', targetId: kept.id, changes: { role: { to: 'member' } } });
      const tokens = await source.exportAdminTokens();
      expect(tokens).toEqual([expect.objectContaining({ name: 'kept token', secretHash: hashAdminToken(secret) })]);
      for (let run = 0; run < 2; run += 1) {
        for (const user of await source.listUsers()) await target.importUser(user);
        for (const token of tokens) await target.importAdminToken(token);
        expect(await target.importAudit(await source.queryAudit({}))).toBe(run === 0 ? 1 : 0);
      }
      expect(await target.listUsers()).toEqual(await source.listUsers());
      expect(await target.exportAdminTokens()).toEqual(tokens);
      expect(await target.findAdminTokenBySecretHash(hashAdminToken(secret))).toEqual(tokens.map(({ secretHash: _hash, ...token }) => token)[0]);
      expect(await target.queryAudit({})).toEqual([entry]);
    });

    it('refuses to change or delete audit entries, even through SQL', async () => {
      const { store, raw } = await fresh();
      const entry = await store.appendAudit({ actorKind: 'root', actorId: 'root', actorLabel: 'admin token', client: '::1', action: 'key.revoked', targetId: 'key_1' });
      await expect(raw(`UPDATE audit_log SET action = 'key.created' WHERE id = '${entry.id}'`)).rejects.toThrow(/append-only/);
      await expect(raw(`DELETE FROM audit_log WHERE id = '${entry.id}'`)).rejects.toThrow(/append-only/);
      expect(await store.queryAudit({})).toEqual([entry]);
      expect(Object.keys(store).concat(Object.getOwnPropertyNames(Object.getPrototypeOf(store))).filter((name) => /audit/i.test(name)).sort()).toEqual(['appendAudit', 'importAudit', 'queryAudit']);
      // The migration's import adds entries that are not there and leaves every existing one as it is.
      expect(await store.importAudit([{ ...entry, action: 'key.created' }])).toBe(0);
      expect(await store.queryAudit({})).toEqual([entry]);
    });
  });
}
