import { randomUUID } from 'node:crypto';
import type { TemplatedApp } from 'uWebSockets.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { changedFields, createdFields } from '../shared/access/audit-changes.js';
import type { Counters } from '../shared/counters/counters.js';
import { GatewayError } from '../shared/errors.js';
import { generateApiKey, type GeneratedKey } from '../shared/keys/api-key.js';
import type { KeyPatch, KeyRecord, NewKey, Store } from '../shared/store/store.js';
import { maxQueryTextLength, publicRequest, requestsQuery, usageQuery, validate } from './admin-query.js';
import { existingProject, keyGovernanceFields, projectRoutes, publicAlerts, toAlerts } from './admin-governance.js';
import { anyRole, keyEditors, runAdminRoute, type AdminAction, type AdminRoute } from './admin-access.js';
import { keyInScope, requireKeyInScope, requireProjectInScope, scopedLedger, scopedUsage, visibleKeyIds } from './admin-access-scope.js';
import { accessRoutes } from './admin-users.js';
import { AdminTokenGuard } from './admin-token-guard.js';
import { keyExpired } from './authenticate.js';
import { replyJson } from './http-reply.js';
import { projectChangeId, type KeyDirectory } from './key-directory.js';
import type { RouteWrapper } from './pipeline/request-wrapper.js';
import type { RefusalCounts } from './refusal-counts.js';

// The admin API (bearer SWITCHBOARD_ADMIN_TOKEN or a per-user sbat_ token): keys and usage, and
// (admin-governance.ts, admin-users.ts) projects, alerts, users, admin tokens and the audit log.
// The CLI and the dashboard use it. Roles and the audit log: admin-access.ts.

export interface AdminDependencies {
  store: Store;
  counters: Counters;
  keys: KeyDirectory;
  adminToken: string;
  logger: Logger;
  /** Tells other ingress instances that a key changed (scaled out); a no-op in one process. */
  announceKeyChange?: (publicId: string) => void | Promise<void>;
  /** This process's refusal counts: flushed before /usage/refused answers, so its own are current. */
  refusals?: RefusalCounts;
  /** Made on first use by adminTokenGuard(), so the bearer API and the dashboard share one. */
  tokenGuard?: AdminTokenGuard;
}

/** The process's one guard of the admin token (backoff per client address). */
export function adminTokenGuard(dependencies: AdminDependencies): AdminTokenGuard {
  return (dependencies.tokenGuard ??= new AdminTokenGuard(dependencies.adminToken));
}

const nullablePositiveInt = z.number().int().min(1).nullable();
const keyFields = {
  name: z.string().trim().min(1).max(200),
  budget_usd: z.number().min(0).max(1e9).nullable(),
  budget_period: z.enum(['none', 'daily', 'weekly', 'monthly']),
  rpm: nullablePositiveInt,
  tpm: nullablePositiveInt,
  max_concurrent: nullablePositiveInt,
  ...keyGovernanceFields,
};
const createSchema = z.object(keyFields).partial().required({ name: true }).strict();
const patchSchema = z.object(keyFields).partial().strict();
export function publicKey(record: KeyRecord): Record<string, unknown> {
  return {
    id: record.id,
    object: 'api_key',
    name: record.name,
    key_hint: record.keyHint,
    budget_usd: record.budgetUsd,
    budget_period: record.budgetPeriod,
    spent_usd: record.spentUsd,
    rpm: record.rpm,
    tpm: record.tpm,
    max_concurrent: record.maxConcurrent,
    created_at: record.createdAt,
    revoked_at: record.revokedAt,
    last_used_at: record.lastUsedAt,
    allowed_models: record.allowedModels,
    expires_at: record.expiresAt,
    project_id: record.projectId,
    alerts: publicAlerts(record.alerts),
    status: record.revokedAt ? 'revoked' : keyExpired(record) ? 'expired' : 'active',
  };
}

function toPatch(body: z.infer<typeof patchSchema>): KeyPatch {
  const patch: KeyPatch = {};
  if (body.name !== undefined) patch.name = body.name;
  if (body.budget_usd !== undefined) patch.budgetUsd = body.budget_usd;
  if (body.budget_period !== undefined) patch.budgetPeriod = body.budget_period;
  if (body.rpm !== undefined) patch.rpm = body.rpm;
  if (body.tpm !== undefined) patch.tpm = body.tpm;
  if (body.max_concurrent !== undefined) patch.maxConcurrent = body.max_concurrent;
  if (body.allowed_models !== undefined) patch.allowedModels = body.allowed_models;
  if (body.expires_at !== undefined) patch.expiresAt = body.expires_at === null ? null : new Date(body.expires_at).toISOString();
  if (body.project_id !== undefined) patch.projectId = body.project_id;
  if (body.alerts !== undefined) patch.alerts = toAlerts(body.alerts);
  return patch;
}

export type { AdminRoute } from './admin-access.js';

export function registerAdminRoutes(app: TemplatedApp, dependencies: AdminDependencies, route: RouteWrapper, routes = adminRoutes(dependencies)): void {
  const guard = adminTokenGuard(dependencies);
  for (const adminRoute of routes) {
    const { method, path, withBody } = adminRoute;
    const options = { headers: ['authorization'], parameters: path.includes(':') ? 1 : 0, body: withBody, remoteAddress: true };
    app[method](`/admin/v1${path}`, route(`admin ${method} ${path}`, options, async ({ res, state, headers, parameters, query, body, remoteAddress }) => {
      // The token is checked before the body is wanted, so an unauthenticated upload is not read.
      const actor = await guard.authenticate(remoteAddress, headers.authorization ?? '', dependencies.store);
      const parsed = body ? await body.json() : undefined;
      if (body && parsed === undefined) return;
      const call = { res, state, parameter: parameters[0] ?? '', query, body: parsed, actor, client: remoteAddress };
      const [status, result] = await runAdminRoute(adminRoute, dependencies.store, dependencies.logger, call);
      replyJson(res, state, status, JSON.stringify(result));
    }));
  }
}

export function adminRoutes(dependencies: AdminDependencies): AdminRoute[] {
  const { store, counters, keys } = dependencies;
  const routes: AdminRoute[] = [];
  const route = (method: AdminRoute['method'], path: string, roles: AdminRoute['roles'], audit: string | undefined, action: AdminAction, withBody = false) =>
    routes.push({ method, path, action, withBody, roles, audit });

  async function existingKey(id: string): Promise<KeyRecord> {
    // No key id holds a control character, and PostgreSQL refuses NUL in text: answer without asking it.
    const record = /[\u0000-\u001f\u007f]/.test(id) || id.length > maxQueryTextLength ? null : await store.getKey(id);
    if (!record) throw new GatewayError('not_found', `No key with id '${id}'.`, { param: 'id' });
    return record;
  }

  // Limits and budgets travel with each admission, so a change applies on the next request once the
  // cached record is dropped. The counters keep the rate window and period spend: resetting them
  // would let a lowered limit start a fresh window, and re-reading spend from the ledger while
  // requests are between their ledger write and settlement would count those twice.
  async function keyChanged(record: KeyRecord): Promise<void> {
    keys.invalidate(record.publicId);
    // Awaited: the answer to the admin leaves only once every ingress has been told.
    await dependencies.announceKeyChange?.(record.publicId);
  }

  async function issueKey(generated: GeneratedKey, settings: Omit<NewKey, 'id' | 'publicId' | 'secretHash' | 'keyHint' | 'createdAt'>): Promise<KeyRecord> {
    const record = await store.createKey({
      ...settings,
      id: `key_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      publicId: generated.publicId,
      secretHash: generated.secretHash,
      keyHint: generated.keyHint,
      createdAt: new Date().toISOString(),
    });
    dependencies.logger.info({ keyId: record.id, hint: record.keyHint }, 'key created');
    return record;
  }

  route('post', '/keys', keyEditors, 'key.created', async ({ body, actor }) => {
    const input = validate(createSchema, body);
    requireProjectInScope(actor, input.project_id ?? null);
    if (input.project_id) await existingProject(store, input.project_id, 'project_id');
    const { name: _name, ...rest } = toPatch(input);
    const generated = generateApiKey();
    const record = await issueKey(generated, { name: input.name, budgetPeriod: 'none', ...rest });
    return [201, { ...publicKey(record), key: generated.key }, { targetType: 'key', targetId: record.id, changes: createdFields(publicKey(record)) }];
  }, true);

  // Rotation: a twin with the same name, budget and limits; the old key stays valid until revoked.
  route('post', '/keys/:id/rotate', keyEditors, 'key.rotated', async ({ parameter, actor }) => {
    const old = await existingKey(parameter);
    requireKeyInScope(actor, old);
    if (old.revokedAt) throw new GatewayError('invalid_value', 'This key is revoked; create a new key instead of rotating it.', { param: 'id' });
    const generated = generateApiKey();
    const record = await issueKey(generated, {
      name: old.name, budgetUsd: old.budgetUsd, budgetPeriod: old.budgetPeriod, rpm: old.rpm, tpm: old.tpm, maxConcurrent: old.maxConcurrent,
      allowedModels: old.allowedModels, expiresAt: old.expiresAt, projectId: old.projectId, alerts: old.alerts,
    });
    return [201, { ...publicKey(record), key: generated.key }, { targetType: 'key', targetId: old.id, changes: { replaced_by: { to: record.id } } }];
  });

  route('get', '/keys', anyRole, undefined, async ({ actor }) => [200, { object: 'list', data: (await store.listKeys()).filter((key) => keyInScope(actor, key)).map(publicKey) }]);
  route('get', '/keys/:id', anyRole, undefined, async ({ parameter, actor }) => {
    const record = await existingKey(parameter);
    requireKeyInScope(actor, record);
    return [200, publicKey(record)];
  });

  route('patch', '/keys/:id', keyEditors, 'key.updated', async ({ parameter, body, actor }) => {
    const before = await existingKey(parameter);
    requireKeyInScope(actor, before);
    const patch = toPatch(validate(patchSchema, body));
    if (patch.projectId !== undefined) requireProjectInScope(actor, patch.projectId);
    if (patch.projectId) await existingProject(store, patch.projectId, 'project_id');
    const record = (await store.updateKey(parameter, patch))!;
    await keyChanged(record);
    return [200, publicKey(record), { targetType: 'key', targetId: record.id, changes: changedFields(publicKey(before), publicKey(record)) }];
  }, true);

  route('del', '/keys/:id', keyEditors, 'key.revoked', async ({ parameter, actor }) => {
    const before = await existingKey(parameter);
    requireKeyInScope(actor, before);
    const record = (await store.revokeKey(parameter, new Date().toISOString()))!;
    await counters.revoke(record.id);
    await keyChanged(record);
    dependencies.logger.info({ keyId: record.id }, 'key revoked');
    return [200, publicKey(record), { targetType: 'key', targetId: record.id, changes: { status: { from: publicKey(before).status, to: 'revoked' } } }];
  });

  projectRoutes(route, store, async (projectId) => {
    keys.invalidate(projectChangeId(projectId));
    await dependencies.announceKeyChange?.(projectChangeId(projectId));
  });

  // Refused requests (401 by a named key, 402, 403, 429) per key, model and status; no ledger rows.
  route('get', '/usage/refused', anyRole, undefined, async ({ query, actor }) => {
    const filter = usageQuery(query);
    await dependencies.refusals?.flush();
    const visible = await visibleKeyIds(store, actor);
    const rows = await store.queryRefusedCounts({ keyId: filter.keyId, since: filter.since, until: filter.until });
    const data = rows
      .filter((row) => (filter.model === undefined || row.model === filter.model) && (visible === null || visible.has(row.keyId)))
      .map((row) => ({ key_id: row.keyId, model: row.model || null, status: row.status, count: row.count }));
    return [200, { object: 'list', data }];
  });

  route('get', '/usage', anyRole, undefined, async ({ query, actor }) => [200, { object: 'list', data: await scopedUsage(store, actor, usageQuery(query)) }]);
  route('get', '/requests', anyRole, undefined, async ({ query, actor }) => [200, { object: 'list', data: (await scopedLedger(store, actor, requestsQuery(query))).map(publicRequest) }]);
  routes.push(...accessRoutes(store));
  return routes;
}
