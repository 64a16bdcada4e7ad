import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { periodStart } from '../shared/counters/period.js';
import { GatewayError } from '../shared/errors.js';
import type { AlertDelivery, BudgetAlert, ProjectPatch, ProjectRecord, Store } from '../shared/store/store.js';
import { changedFields, createdFields } from '../shared/access/audit-changes.js';
import { adminsOnly, anyRole, type AdminAction, type AdminRoute } from './admin-access.js';
import { isMember, projectInScope, requireProjectInScope, visibleKeyIds } from './admin-access-scope.js';
import { maxQueryTextLength, validate } from './admin-query.js';

// The governance part of the admin API: the key fields allowed_models, expires_at, project_id and
// alerts, and /admin/v1/projects (a budget, period and rate limits shared by the project's keys).

const webhookUrl = z.string().max(2000).url().refine((value) => /^https?:\/\//i.test(value), 'must be an http or https URL');
export const alertsSchema = z.array(z.object({ threshold_percent: z.number().int().min(1).max(1000), webhook_url: webhookUrl }).strict()).max(20);
const modelPattern = z.string().trim().min(1).max(200).refine((value) => !/[\u0000-\u001f\u007f]/.test(value), 'must not contain control characters');
const idText = z.string().min(1).max(maxQueryTextLength).refine((value) => !/[\u0000-\u001f\u007f]/.test(value), 'must not contain control characters');

/** Fields a key may carry beyond budget and limits (all nullable; alerts an array). */
export const keyGovernanceFields = {
  allowed_models: z.array(modelPattern).min(1).max(200).nullable(),
  expires_at: z.string().datetime({ offset: true }).nullable(),
  project_id: idText.nullable(),
  alerts: alertsSchema,
};

export function toAlerts(alerts: z.infer<typeof alertsSchema>): BudgetAlert[] {
  return alerts.map((alert) => ({ thresholdPercent: alert.threshold_percent, webhookUrl: alert.webhook_url }));
}

export function publicAlerts(alerts: BudgetAlert[]): Array<Record<string, unknown>> {
  return alerts.map((alert) => ({ threshold_percent: alert.thresholdPercent, webhook_url: alert.webhookUrl }));
}

const nullablePositiveInt = z.number().int().min(1).nullable();
const projectFields = {
  name: z.string().trim().min(1).max(200),
  budget_usd: z.number().min(0).max(1e9).nullable(),
  budget_period: z.enum(['none', 'daily', 'weekly', 'monthly']),
  rpm: nullablePositiveInt,
  tpm: nullablePositiveInt,
  alerts: alertsSchema,
};
const projectCreate = z.object(projectFields).partial().required({ name: true }).strict();
const projectPatch = z.object(projectFields).partial().strict();

function toProjectPatch(body: z.infer<typeof projectPatch>): ProjectPatch {
  const patch: ProjectPatch = {};
  if (body.name !== undefined) patch.name = body.name;
  if (body.budget_usd !== undefined) patch.budgetUsd = body.budget_usd;
  if (body.budget_period !== undefined) patch.budgetPeriod = body.budget_period;
  if (body.rpm !== undefined) patch.rpm = body.rpm;
  if (body.tpm !== undefined) patch.tpm = body.tpm;
  if (body.alerts !== undefined) patch.alerts = toAlerts(body.alerts);
  return patch;
}

/** The project as the admin API shows it, with its spend in the current budget period. */
export async function publicProject(store: Store, project: ProjectRecord): Promise<Record<string, unknown>> {
  const spent = await store.projectSpentNanosSince(project.id, periodStart(project.budgetPeriod, Date.now()));
  return {
    id: project.id,
    object: 'project',
    name: project.name,
    budget_usd: project.budgetUsd,
    budget_period: project.budgetPeriod,
    spent_usd: spent / 1e9,
    rpm: project.rpm,
    tpm: project.tpm,
    alerts: publicAlerts(project.alerts),
    created_at: project.createdAt,
  };
}

const alertsQuery = z.object({ subject_id: idText.optional(), limit: z.coerce.number().int().min(1).max(1000).optional() }).strict();

/** An alert delivery as the admin API shows it. */
function publicDelivery(delivery: AlertDelivery): Record<string, unknown> {
  return {
    id: delivery.id, object: 'alert_delivery', subject_kind: delivery.subjectKind, subject_id: delivery.subjectId, threshold_percent: delivery.thresholdPercent,
    webhook_url: delivery.webhookUrl, period_start: delivery.periodStart, status: delivery.status, attempts: delivery.attempts,
    last_status: delivery.lastStatus, last_error: delivery.lastError, created_at: delivery.createdAt, delivered_at: delivery.deliveredAt,
  };
}

export async function existingProject(store: Store, id: string, param = 'id'): Promise<ProjectRecord> {
  const project = /[\u0000-\u001f\u007f]/.test(id) || id.length > maxQueryTextLength ? null : await store.getProject(id);
  if (!project) throw new GatewayError(param === 'id' ? 'not_found' : 'invalid_value', `No project with id '${id}'.`, { param });
  return project;
}

type Route = (method: AdminRoute['method'], path: string, roles: AdminRoute['roles'], audit: string | undefined, action: AdminAction, withBody?: boolean) => void;

/** Registers /projects and /alerts; `changed` tells every ingress to drop its cached copy. Members see only their projects. */
export function projectRoutes(route: Route, store: Store, changed: (projectId: string) => Promise<void>): void {
  route('post', '/projects', adminsOnly, 'project.created', async ({ body }) => {
    const input = validate(projectCreate, body);
    const project = await store.createProject({
      id: `proj_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      name: input.name,
      budgetUsd: input.budget_usd ?? null,
      budgetPeriod: input.budget_period ?? 'none',
      rpm: input.rpm ?? null,
      tpm: input.tpm ?? null,
      alerts: toAlerts(input.alerts ?? []),
      createdAt: new Date().toISOString(),
    });
    const shown = await publicProject(store, project);
    return [201, shown, { targetType: 'project', targetId: project.id, changes: createdFields(shown) }];
  }, true);
  route('get', '/projects', anyRole, undefined, async ({ actor }) => {
    const projects = (await store.listProjects()).filter((project) => projectInScope(actor, project.id));
    return [200, { object: 'list', data: await Promise.all(projects.map((project) => publicProject(store, project))) }];
  });
  route('get', '/projects/:id', anyRole, undefined, async ({ parameter, actor }) => {
    const project = await existingProject(store, parameter);
    requireProjectInScope(actor, project.id);
    return [200, await publicProject(store, project)];
  });
  route('patch', '/projects/:id', adminsOnly, 'project.updated', async ({ parameter, body }) => {
    const before = await publicProject(store, await existingProject(store, parameter));
    const project = (await store.updateProject(parameter, toProjectPatch(validate(projectPatch, body))))!;
    await changed(project.id);
    const shown = await publicProject(store, project);
    return [200, shown, { targetType: 'project', targetId: project.id, changes: changedFields(before, shown) }];
  }, true);
  // Alert deliveries, newest first: one per key or project, threshold, webhook and budget period.
  route('get', '/alerts', anyRole, undefined, async ({ query, actor }) => {
    const input = validate(alertsQuery, Object.fromEntries(new URLSearchParams(query)));
    if (!isMember(actor)) {
      const deliveries = await store.listAlertDeliveries({ subjectId: input.subject_id, limit: input.limit });
      return [200, { object: 'list', data: deliveries.map(publicDelivery) }];
    }
    const keys = (await visibleKeyIds(store, actor))!;
    const visible = (delivery: AlertDelivery) => (delivery.subjectKind === 'key' ? keys.has(delivery.subjectId) : projectInScope(actor, delivery.subjectId));
    const deliveries = await store.listAlertDeliveries({ subjectId: input.subject_id, limit: input.subject_id ? input.limit : 1000 });
    return [200, { object: 'list', data: deliveries.filter(visible).slice(0, input.limit ?? 100).map(publicDelivery) }];
  });
  route('del', '/projects/:id', adminsOnly, 'project.deleted', async ({ parameter }) => {
    const project = await existingProject(store, parameter);
    await store.deleteProject(project.id);
    await changed(project.id);
    return [200, { id: project.id, object: 'project', deleted: true }, { targetType: 'project', targetId: project.id, changes: { name: { from: project.name } } }];
  });
}
