import { randomUUID } from 'node:crypto';
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Counters } from '../shared/counters/counters.js';
import { GatewayError } from '../shared/errors.js';
import { generateApiKey } from '../shared/keys/api-key.js';
import type { KeyPatch, KeyRecord, NewKey, Store } from '../shared/store/store.js';
import { maxQueryTextLength, publicRequest, requestsQuery, usageQuery, validate } from './admin-query.js';
import { existingProject, keyGovernanceFields, projectRoutes, publicAlerts, toAlerts } from './admin-governance.js';
import { AdminTokenGuard } from './admin-token-guard.js';
import { keyExpired } from './authenticate.js';
import { replyJson, type ReplyState } from './http-reply.js';
import { projectChangeId, type KeyDirectory } from './key-directory.js';
import type { RouteWrapper } from './pipeline/request-wrapper.js';
import type { RefusalCounts } from './refusal-counts.js';

// The admin API (bearer SWITCHBOARD_ADMIN_TOKEN): keys and usage. The CLI and the dashboard use it.

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

type AdminAction = (context: { res: HttpResponse; state: ReplyState; parameter: string; query: string; body?: unknown }) => Promise<[number, unknown]>;

/** One admin action, its path relative to /admin/v1. The bearer routes below and the dashboard both serve these. */
export interface AdminRoute {
  method: 'get' | 'post' | 'patch' | 'del';
  path: string;
  action: AdminAction;
  withBody: boolean;
}

export function registerAdminRoutes(app: TemplatedApp, dependencies: AdminDependencies, route: RouteWrapper): void {
  const guard = adminTokenGuard(dependencies);
  for (const { method, path, action, withBody } of adminRoutes(dependencies)) {
    const options = { headers: ['authorization'], parameters: path.includes(':') ? 1 : 0, body: withBody, remoteAddress: true };
    app[method](`/admin/v1${path}`, route(`admin ${method} ${path}`, options, async ({ res, state, headers, parameters, query, body, remoteAddress }) => {
      // The token is checked before the body is wanted, so an unauthenticated upload is not read.
      guard.checkBearer(remoteAddress, headers.authorization ?? '');
      const parsed = body ? await body.json() : undefined;
      if (body && parsed === undefined) return;
      const [status, result] = await action({ res, state, parameter: parameters[0] ?? '', query, body: parsed });
      replyJson(res, state, status, JSON.stringify(result));
    }));
  }
}

export function adminRoutes(dependencies: AdminDependencies): AdminRoute[] {
  const { store, counters, keys } = dependencies;
  const routes: AdminRoute[] = [];
  const route = (method: AdminRoute['method'], path: string, action: AdminAction, withBody = false) => routes.push({ method, path, action, withBody });

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

  async function issueKey(settings: Omit<NewKey, 'id' | 'publicId' | 'secretHash' | 'keyHint' | 'createdAt'>): Promise<[number, unknown]> {
    const generated = generateApiKey();
    const record = await store.createKey({
      ...settings,
      id: `key_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      publicId: generated.publicId,
      secretHash: generated.secretHash,
      keyHint: generated.keyHint,
      createdAt: new Date().toISOString(),
    });
    dependencies.logger.info({ keyId: record.id, hint: record.keyHint }, 'key created');
    return [201, { ...publicKey(record), key: generated.key }];
  }

  route('post', '/keys', async ({ body }) => {
    const input = validate(createSchema, body);
    if (input.project_id) await existingProject(store, input.project_id, 'project_id');
    const { name: _name, ...rest } = toPatch(input);
    return issueKey({ name: input.name, budgetPeriod: 'none', ...rest });
  }, true);

  // Rotation: a twin with the same name, budget and limits; the old key stays valid until revoked.
  route('post', '/keys/:id/rotate', async ({ parameter }) => {
    const old = await existingKey(parameter);
    if (old.revokedAt) throw new GatewayError('invalid_value', 'This key is revoked; create a new key instead of rotating it.', { param: 'id' });
    return issueKey({
      name: old.name, budgetUsd: old.budgetUsd, budgetPeriod: old.budgetPeriod, rpm: old.rpm, tpm: old.tpm, maxConcurrent: old.maxConcurrent,
      allowedModels: old.allowedModels, expiresAt: old.expiresAt, projectId: old.projectId, alerts: old.alerts,
    });
  });

  route('get', '/keys', async () => [200, { object: 'list', data: (await store.listKeys()).map(publicKey) }]);
  route('get', '/keys/:id', async ({ parameter }) => [200, publicKey(await existingKey(parameter))]);

  route('patch', '/keys/:id', async ({ parameter, body }) => {
    await existingKey(parameter);
    const patch = toPatch(validate(patchSchema, body));
    if (patch.projectId) await existingProject(store, patch.projectId, 'project_id');
    const record = (await store.updateKey(parameter, patch))!;
    await keyChanged(record);
    return [200, publicKey(record)];
  }, true);

  route('del', '/keys/:id', async ({ parameter }) => {
    await existingKey(parameter);
    const record = (await store.revokeKey(parameter, new Date().toISOString()))!;
    await counters.revoke(record.id);
    await keyChanged(record);
    dependencies.logger.info({ keyId: record.id }, 'key revoked');
    return [200, publicKey(record)];
  });

  projectRoutes(route, store, async (projectId) => {
    keys.invalidate(projectChangeId(projectId));
    await dependencies.announceKeyChange?.(projectChangeId(projectId));
  });

  // Refused requests (401 by a named key, 402, 403, 429) per key, model and status; no ledger rows.
  route('get', '/usage/refused', async ({ query }) => {
    const filter = usageQuery(query);
    await dependencies.refusals?.flush();
    const rows = await store.queryRefusedCounts({ keyId: filter.keyId, since: filter.since, until: filter.until });
    const data = rows.filter((row) => filter.model === undefined || row.model === filter.model).map((row) => ({ key_id: row.keyId, model: row.model || null, status: row.status, count: row.count }));
    return [200, { object: 'list', data }];
  });

  route('get', '/usage', async ({ query }) => [200, { object: 'list', data: await store.queryUsage(usageQuery(query)) }]);
  route('get', '/requests', async ({ query }) => [200, { object: 'list', data: (await store.listLedger(requestsQuery(query))).map(publicRequest) }]);
  return routes;
}
