import { randomBytes } from 'node:crypto';
import { generateAdminToken } from '../access/admin-token-secret.js';
import type { Role } from '../access/principal.js';
import {
  SubjectConflictError, UserExistsError,
  type AccessStore, type AdminTokenRecord, type AuditEntry, type AuditFilter, type NewAuditEntry, type UserPatch, type UserRecord,
} from './access-records.js';
import type { SqlRunner } from './governance-tables.js';
import { jsonColumn, readJsonColumn, type Row } from './store-records.js';
import { toIsoTime } from './usage-plan.js';

// The tables of migration 8 (access-schema.ts), written once for both stores like
// governance-tables.ts. Every statement is a single row change or a read, so both drivers run them
// as they come; a removal revokes the user's tokens after marking the user removed, and the
// bearer guard refuses a removed user's token whichever of the two it sees first.

const newId = (prefix: string) => `${prefix}_${randomBytes(10).toString('hex')}`;
const normalizedEmail = (email: string) => email.trim().toLowerCase();

function rowToUser(row: Row): UserRecord {
  return {
    id: row.id as string,
    email: row.email as string,
    name: (row.name as string | null) ?? null,
    role: row.role as Role,
    projects: readJsonColumn<string[]>(row.projects, []),
    subject: (row.subject as string | null) ?? null,
    createdAt: row.created_at as string,
    removedAt: (row.removed_at as string | null) ?? null,
    sessionsValidAfter: (row.sessions_valid_after as string | null) ?? null,
  };
}

function rowToToken(row: Row): AdminTokenRecord {
  return {
    id: row.id as string,
    userId: row.user_id as string,
    name: row.name as string,
    hint: row.hint as string,
    createdAt: row.created_at as string,
    revokedAt: (row.revoked_at as string | null) ?? null,
  };
}

function rowToAudit(row: Row): AuditEntry {
  return {
    id: row.id as string,
    at: row.at as string,
    actorKind: row.actor_kind as AuditEntry['actorKind'],
    actorId: row.actor_id as string,
    actorLabel: row.actor_label as string,
    action: row.action as string,
    targetType: (row.target_type as string | null) ?? null,
    targetId: (row.target_id as string | null) ?? null,
    client: row.client as string,
    changes: readJsonColumn<AuditEntry['changes']>(row.changes, null),
    outcome: row.outcome as AuditEntry['outcome'],
  };
}

/** Unique-index violations of both drivers (SQLite's message, PostgreSQL's SQLSTATE 23505). */
function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || (typeof e?.message === 'string' && e.message.includes('UNIQUE constraint failed'));
}

const upsertAll = (columns: string[]) => columns.filter((column) => column !== 'id').map((column) => `${column} = excluded.${column}`).join(', ');

const USER_PATCH: Record<keyof UserPatch, string> = { email: 'email', name: 'name', role: 'role', projects: 'projects' };

export function accessMethods(sql: SqlRunner): AccessStore {
  const oneUser = async (where: string, params: unknown[]) => {
    const [row] = await sql.all(`SELECT * FROM users WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT 1`, params);
    return row ? rowToUser(row) : null;
  };
  const getUser = (id: string) => oneUser('id = ?', [id]);
  const getAdminToken = async (id: string) => {
    const [row] = await sql.all('SELECT * FROM admin_tokens WHERE id = ?', [id]);
    return row ? rowToToken(row) : null;
  };

  async function insertUser(user: { email: string; name?: string | null; role: Role; projects?: string[]; subject?: string | null }): Promise<UserRecord> {
    const id = newId('usr');
    try {
      await sql.run('INSERT INTO users (id, email, name, role, projects, subject, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        id, normalizedEmail(user.email), user.name ?? null, user.role, jsonColumn(user.projects ?? []), user.subject ?? null, new Date().toISOString(),
      ]);
    } catch (error) {
      if (isUniqueViolation(error)) throw new UserExistsError(normalizedEmail(user.email));
      throw error;
    }
    return (await getUser(id))!;
  }

  async function signIn(identity: Parameters<AccessStore['upsertUserFromSignIn']>[0]): Promise<UserRecord> {
    const email = normalizedEmail(identity.email);
    let user = await oneUser('subject = ? AND removed_at IS NULL', [identity.subject]);
    if (!user) {
      user = await oneUser('email = ? AND removed_at IS NULL', [email]);
      if (user && user.subject !== null && user.subject !== identity.subject) throw new SubjectConflictError();
      if (user && user.subject === null) await sql.run('UPDATE users SET subject = ? WHERE id = ?', [identity.subject, user.id]);
    }
    if (!user) {
      // Someone an admin removed stays out, whichever way they come back.
      const removed = await oneUser('(subject = ? OR email = ?) AND removed_at IS NOT NULL', [identity.subject, email]);
      if (removed) return removed;
      return insertUser({ email, name: identity.name ?? null, role: identity.role ?? 'viewer', subject: identity.subject });
    }
    const sets: string[] = [];
    const values: unknown[] = [];
    if (identity.role !== undefined && identity.role !== user.role) { sets.push('role = ?'); values.push(identity.role); }
    if (identity.name && identity.name !== user.name) { sets.push('name = ?'); values.push(identity.name); }
    if (sets.length > 0) await sql.run(`UPDATE users SET ${sets.join(', ')} WHERE id = ?`, [...values, user.id]);
    return (await getUser(user.id))!;
  }

  return {
    async upsertUserFromSignIn(identity) {
      try {
        return await signIn(identity);
      } catch (error) {
        // Two first sign-ins of one person at once: the loser finds the winner's row.
        if (error instanceof UserExistsError) return signIn(identity);
        throw error;
      }
    },
    getUser,
    async listUsers() {
      return (await sql.all('SELECT * FROM users ORDER BY created_at, id', [])).map(rowToUser);
    },
    createUser: (user) => insertUser(user),
    async updateUser(id, patch) {
      const fields = (Object.keys(USER_PATCH) as (keyof UserPatch)[]).filter((field) => patch[field] !== undefined);
      if (fields.length > 0) {
        const values = fields.map((field) => (field === 'projects' ? jsonColumn(patch.projects) : field === 'email' ? normalizedEmail(patch.email!) : patch[field]));
        try {
          await sql.run(`UPDATE users SET ${fields.map((field) => `${USER_PATCH[field]} = ?`).join(', ')} WHERE id = ? AND removed_at IS NULL`, [...values, id]);
        } catch (error) {
          if (isUniqueViolation(error)) throw new UserExistsError(normalizedEmail(patch.email ?? ''));
          throw error;
        }
      }
      const user = await getUser(id);
      return user && user.removedAt === null ? user : null;
    },
    async removeUser(id) {
      const now = new Date().toISOString();
      await sql.run('UPDATE users SET removed_at = COALESCE(removed_at, ?), sessions_valid_after = ? WHERE id = ?', [now, now, id]);
      await sql.run('UPDATE admin_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL', [now, id]);
      return getUser(id);
    },
    async endUserSessions(id) {
      await sql.run('UPDATE users SET sessions_valid_after = ? WHERE id = ?', [new Date().toISOString(), id]);
      return getUser(id);
    },
    async createAdminToken({ userId, name }) {
      const generated = generateAdminToken();
      const id = newId('atk');
      await sql.run('INSERT INTO admin_tokens (id, user_id, name, secret_hash, hint, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
        id, userId, name, generated.secretHash, generated.hint, new Date().toISOString(),
      ]);
      return { record: (await getAdminToken(id))!, secret: generated.secret };
    },
    async listAdminTokens(userId) {
      const rows = userId === undefined
        ? await sql.all('SELECT * FROM admin_tokens ORDER BY created_at, id', [])
        : await sql.all('SELECT * FROM admin_tokens WHERE user_id = ? ORDER BY created_at, id', [userId]);
      return rows.map(rowToToken);
    },
    getAdminToken,
    async revokeAdminToken(id) {
      await sql.run('UPDATE admin_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?', [new Date().toISOString(), id]);
      return getAdminToken(id);
    },
    async findAdminTokenBySecretHash(hash) {
      const [row] = await sql.all('SELECT * FROM admin_tokens WHERE secret_hash = ? AND revoked_at IS NULL', [hash]);
      return row ? rowToToken(row) : null;
    },
    async exportAdminTokens() {
      return (await sql.all('SELECT * FROM admin_tokens ORDER BY created_at, id', [])).map((row) => ({ ...rowToToken(row), secretHash: row.secret_hash as string }));
    },
    async importUser(u) {
      const columns = ['id', 'email', 'name', 'role', 'projects', 'subject', 'created_at', 'removed_at', 'sessions_valid_after'];
      await sql.run(`INSERT INTO users (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) ON CONFLICT (id) DO UPDATE SET ${upsertAll(columns)}`, [
        u.id, u.email, u.name, u.role, jsonColumn(u.projects), u.subject, u.createdAt, u.removedAt, u.sessionsValidAfter,
      ]);
    },
    async importAdminToken(t) {
      const columns = ['id', 'user_id', 'name', 'secret_hash', 'hint', 'created_at', 'revoked_at'];
      await sql.run(`INSERT INTO admin_tokens (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) ON CONFLICT (id) DO UPDATE SET ${upsertAll(columns)}`, [
        t.id, t.userId, t.name, t.secretHash, t.hint, t.createdAt, t.revokedAt,
      ]);
    },
    async importAudit(entries) {
      let written = 0;
      for (const e of entries) {
        written += await sql.run(
          'INSERT INTO audit_log (id, at, actor_kind, actor_id, actor_label, action, target_type, target_id, client, changes, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
          [e.id, e.at, e.actorKind, e.actorId, e.actorLabel, e.action, e.targetType, e.targetId, e.client, jsonColumn(e.changes), e.outcome],
        );
      }
      return written;
    },
    async appendAudit(entry: NewAuditEntry) {
      const record: AuditEntry = {
        id: newId('aud'),
        at: toIsoTime(entry.at ?? new Date().toISOString()),
        actorKind: entry.actorKind,
        actorId: entry.actorId,
        actorLabel: entry.actorLabel,
        action: entry.action,
        targetType: entry.targetType ?? null,
        targetId: entry.targetId ?? null,
        client: entry.client,
        changes: entry.changes ?? null,
        outcome: entry.outcome ?? 'success',
      };
      await sql.run(
        'INSERT INTO audit_log (id, at, actor_kind, actor_id, actor_label, action, target_type, target_id, client, changes, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [record.id, record.at, record.actorKind, record.actorId, record.actorLabel, record.action, record.targetType, record.targetId, record.client, jsonColumn(record.changes), record.outcome],
      );
      return record;
    },
    async queryAudit(filter: AuditFilter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.actor !== undefined) { where.push('(actor_id = ? OR actor_label = ?)'); params.push(filter.actor, filter.actor); }
      if (filter.action !== undefined) {
        const family = /^(.*?)(?:\.\*)?$/.exec(filter.action)![1]!;
        if (filter.action.endsWith('.*') || !family.includes('.')) {
          where.push('(action = ? OR substr(action, 1, ?) = ?)'); params.push(family, family.length + 1, `${family}.`);
        } else {
          where.push('action = ?'); params.push(filter.action);
        }
      }
      if (filter.targetId !== undefined) { where.push('target_id = ?'); params.push(filter.targetId); }
      if (filter.since !== undefined) { where.push('at >= ?'); params.push(toIsoTime(filter.since)); }
      if (filter.until !== undefined) { where.push('at < ?'); params.push(toIsoTime(filter.until)); }
      if (filter.before !== undefined) {
        const [cursor] = await sql.all('SELECT at, id FROM audit_log WHERE id = ?', [filter.before]);
        if (!cursor) return [];
        where.push('(at < ? OR (at = ? AND id < ?))'); params.push(cursor.at, cursor.at, cursor.id);
      }
      const limit = Math.max(1, Math.min(1000, Math.trunc(filter.limit ?? 100)));
      const rows = await sql.all(
        `SELECT * FROM audit_log ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY at DESC, id DESC LIMIT ?`,
        [...params, limit],
      );
      return rows.map(rowToAudit);
    },
  };
}
