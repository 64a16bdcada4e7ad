import { z } from 'zod';
import { changedFields, createdFields } from '../shared/access/audit-changes.js';
import type { Principal } from '../shared/access/principal.js';
import { GatewayError } from '../shared/errors.js';
import { UserExistsError, type AdminTokenRecord, type AuditEntry, type UserRecord } from '../shared/store/access-records.js';
import type { Store } from '../shared/store/store.js';
import { adminsOnly, anyRole, overseers, type AdminAction, type AdminRoute } from './admin-access.js';
import { filterText, isoTime, maxQueryTextLength, validate } from './admin-query.js';

// /admin/v1/users, /admin/v1/admin-tokens, /admin/v1/audit and /admin/v1/me. Users and tokens are
// changed by admins only; admins and viewers may read them and the audit log. The audit log has
// only GET here: nothing in the API changes or deletes an entry.

const idText = z.string().min(1).max(maxQueryTextLength).refine((value) => !/[\u0000-\u001f\u007f]/.test(value), 'must not contain control characters');
const userFields = {
  email: z.string().trim().max(320).email(),
  name: z.string().trim().min(1).max(200).nullable(),
  role: z.enum(['admin', 'member', 'viewer']),
  projects: z.array(idText).max(200),
};
const userCreate = z.object(userFields).partial().required({ email: true, role: true }).strict();
const userPatch = z.object({ name: userFields.name, role: userFields.role, projects: userFields.projects }).partial().strict();
const tokenCreate = z.object({ user_id: idText, name: z.string().trim().min(1).max(200) }).strict();
const tokenQuery = z.object({ user_id: idText.optional() }).strict();
const auditQuery = z.object({
  actor: filterText.optional(),
  action: filterText.optional(),
  target_id: filterText.optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
  before: filterText.optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
}).strict();

export function publicUser(user: UserRecord): Record<string, unknown> {
  return {
    id: user.id, object: 'user', email: user.email, name: user.name, role: user.role, projects: user.projects,
    sso_linked: user.subject !== null, created_at: user.createdAt, removed_at: user.removedAt, status: user.removedAt ? 'removed' : 'active',
  };
}

export function publicAdminToken(token: AdminTokenRecord): Record<string, unknown> {
  return { id: token.id, object: 'admin_token', user_id: token.userId, name: token.name, hint: token.hint, created_at: token.createdAt, revoked_at: token.revokedAt, status: token.revokedAt ? 'revoked' : 'active' };
}

export function publicAuditEntry(entry: AuditEntry): Record<string, unknown> {
  return {
    id: entry.id, object: 'audit_entry', at: entry.at, actor: { kind: entry.actorKind, id: entry.actorId, label: entry.actorLabel },
    action: entry.action, target_type: entry.targetType, target_id: entry.targetId, client: entry.client, changes: entry.changes, outcome: entry.outcome,
  };
}

export function publicPrincipal(principal: Principal): Record<string, unknown> {
  return { object: 'principal', kind: principal.kind, id: principal.id, label: principal.label, role: principal.role, projects: principal.projects, user_id: principal.userId ?? (principal.kind === 'user' ? principal.id : null) };
}

const params = (query: string) => Object.fromEntries([...new URLSearchParams(query)].filter(([, value]) => value !== ''));

export function accessRoutes(store: Store): AdminRoute[] {
  const routes: AdminRoute[] = [];
  const route = (method: AdminRoute['method'], path: string, allowed: AdminRoute['roles'], audit: string | undefined, action: AdminAction, withBody = false) =>
    routes.push({ method, path, action, withBody, roles: allowed, audit });

  async function existingUser(id: string, param = 'id'): Promise<UserRecord> {
    const user = /[\u0000-\u001f\u007f]/.test(id) || id.length > maxQueryTextLength ? null : await store.getUser(id);
    if (!user || user.removedAt !== null) throw new GatewayError(param === 'id' ? 'not_found' : 'invalid_value', `No user with id '${id}'.`, { param });
    return user;
  }

  async function existingProjects(ids: string[] | undefined): Promise<void> {
    for (const id of ids ?? []) {
      if (!(await store.getProject(id))) throw new GatewayError('invalid_value', `No project with id '${id}'.`, { param: 'projects' });
    }
  }

  route('get', '/me', anyRole, undefined, async ({ actor }) => [200, publicPrincipal(actor)]);

  route('get', '/users', overseers, undefined, async () => [200, { object: 'list', data: (await store.listUsers()).map(publicUser) }]);
  route('get', '/users/:id', overseers, undefined, async ({ parameter }) => {
    const user = /[\u0000-\u001f\u007f]/.test(parameter) || parameter.length > maxQueryTextLength ? null : await store.getUser(parameter);
    if (!user) throw new GatewayError('not_found', `No user with id '${parameter}'.`, { param: 'id' });
    return [200, publicUser(user)];
  });
  route('post', '/users', adminsOnly, 'user.created', async ({ body }) => {
    const input = validate(userCreate, body);
    await existingProjects(input.projects);
    let user: UserRecord;
    try {
      user = await store.createUser({ email: input.email, name: input.name ?? null, role: input.role, projects: input.projects ?? [] });
    } catch (error) {
      if (error instanceof UserExistsError) throw new GatewayError('already_exists', error.message, { param: 'email' });
      throw error;
    }
    const shown = publicUser(user);
    return [201, shown, { targetType: 'user', targetId: user.id, changes: createdFields(shown) }];
  }, true);
  route('patch', '/users/:id', adminsOnly, 'user.updated', async ({ parameter, body }) => {
    const before = await existingUser(parameter);
    const input = validate(userPatch, body);
    await existingProjects(input.projects);
    const user = (await store.updateUser(before.id, input))!;
    return [200, publicUser(user), { targetType: 'user', targetId: user.id, changes: changedFields(publicUser(before), publicUser(user)) }];
  }, true);
  // Removal keeps the row (the audit log still names the user), ends their dashboard sessions and revokes their admin tokens.
  route('del', '/users/:id', adminsOnly, 'user.removed', async ({ parameter }) => {
    const before = await existingUser(parameter);
    const revoked = (await store.listAdminTokens(before.id)).filter((token) => token.revokedAt === null).map((token) => token.id);
    const user = (await store.removeUser(before.id))!;
    const changes = { ...changedFields(publicUser(before), publicUser(user)), ...(revoked.length > 0 ? { admin_tokens_revoked: { to: revoked } } : {}) };
    return [200, publicUser(user), { targetType: 'user', targetId: user.id, changes }];
  });

  route('get', '/admin-tokens', overseers, undefined, async ({ query }) => {
    const input = validate(tokenQuery, params(query));
    return [200, { object: 'list', data: (await store.listAdminTokens(input.user_id)).map(publicAdminToken) }];
  });
  // The token itself is in this answer only; the audit entry names the token and its user, never the secret.
  route('post', '/admin-tokens', adminsOnly, 'admin_token.created', async ({ body }) => {
    const input = validate(tokenCreate, body);
    const user = await existingUser(input.user_id, 'user_id');
    const { record, secret } = await store.createAdminToken({ userId: user.id, name: input.name });
    const shown = publicAdminToken(record);
    return [201, { ...shown, token: secret }, { targetType: 'admin_token', targetId: record.id, changes: { name: { to: record.name }, user_id: { to: user.id }, user_email: { to: user.email } } }];
  }, true);
  route('del', '/admin-tokens/:id', adminsOnly, 'admin_token.revoked', async ({ parameter }) => {
    const existing = /[\u0000-\u001f\u007f]/.test(parameter) || parameter.length > maxQueryTextLength ? null : await store.getAdminToken(parameter);
    if (!existing) throw new GatewayError('not_found', `No admin token with id '${parameter}'.`, { param: 'id' });
    const token = (await store.revokeAdminToken(existing.id))!;
    return [200, publicAdminToken(token), { targetType: 'admin_token', targetId: token.id, changes: { status: { from: existing.revokedAt ? 'revoked' : 'active', to: 'revoked' }, user_id: { to: token.userId } } }];
  });

  route('get', '/audit', overseers, undefined, async ({ query }) => {
    const input = validate(auditQuery, params(query));
    const limit = input.limit ?? 100;
    const entries = await store.queryAudit({ actor: input.actor, action: input.action, targetId: input.target_id, since: input.since, until: input.until, before: input.before, limit });
    const next = entries.length === limit ? entries[entries.length - 1]!.id : null;
    return [200, { object: 'list', data: entries.map(publicAuditEntry), next_before: next }];
  });
  return routes;
}
