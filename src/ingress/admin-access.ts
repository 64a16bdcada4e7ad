import type { HttpResponse } from 'uWebSockets.js';
import type { Logger } from 'pino';
import { withoutWebhookPaths } from '../shared/access/audit-changes.js';
import { auditActor } from '../shared/access/principal-lookup.js';
import type { Principal, Role } from '../shared/access/principal.js';
import { GatewayError } from '../shared/errors.js';
import type { AuditChanges, NewAuditEntry } from '../shared/store/access-records.js';
import type { Store } from '../shared/store/store.js';
import type { ReplyState } from './http-reply.js';

// The one place where the admin API decides who may do what and records what was done. Every
// admin action, whether called through the bearer API (/admin/v1) or the dashboard
// (/dashboard/api), runs through runAdminRoute(): the route declares the roles it admits and the
// audit action it records; the action itself narrows a member to their projects (admin-access-scope.ts)
// and returns what it changed. Denied changes are recorded too (outcome failure): the caller is
// known, so the entry names who tried. A viewer's answers carry no webhook path (see the end).

export const anyRole: readonly Role[] = ['admin', 'member', 'viewer'];
/** Key changes: a member's are checked against their projects by the action. */
export const keyEditors: readonly Role[] = ['admin', 'member'];
/** Reads of the whole team's set-up (users, tokens, audit): not for a member, who sees only their projects. */
export const overseers: readonly Role[] = ['admin', 'viewer'];
export const adminsOnly: readonly Role[] = ['admin'];

export interface AdminCall {
  res: HttpResponse;
  state: ReplyState;
  parameter: string;
  query: string;
  body?: unknown;
  actor: Principal;
  /** The client's address, for the audit log. */
  client: string;
}

/** What an action changed, for its audit entry; never a secret. */
export interface AuditDetails {
  targetType: string;
  targetId: string;
  changes?: AuditChanges | null;
  /** When the entry's action differs from the route's (a rotation also creates a key). */
  action?: string;
}

export type AdminAction = (call: AdminCall) => Promise<[number, unknown, AuditDetails?]>;

/** One admin action, its path relative to /admin/v1. The bearer routes and the dashboard both serve these. */
export interface AdminRoute {
  method: 'get' | 'post' | 'patch' | 'put' | 'del';
  path: string;
  action: AdminAction;
  withBody: boolean;
  /** The roles that may call it. */
  roles: readonly Role[];
  /** The audit action it records (changes only): key.created, user.removed, ... */
  audit?: string;
}

export function insufficientRole(message: string): GatewayError {
  return new GatewayError('insufficient_role', message);
}

function describeMethod(method: AdminRoute['method']): string {
  return method === 'del' ? 'DELETE' : method.toUpperCase();
}

/** Authorizes, runs and audits one admin action; the answer's status and body. */
export async function runAdminRoute(route: AdminRoute, store: Store, logger: Logger, call: AdminCall): Promise<[number, unknown]> {
  const record = async (entry: Omit<NewAuditEntry, 'actorKind' | 'actorId' | 'actorLabel' | 'client'>) => {
    const full: NewAuditEntry = { ...auditActor(call.actor), client: call.client, ...entry };
    try {
      await store.appendAudit(full);
    } catch (error) {
      // The change is made; failing its answer would invite a retry that makes it twice. The log
      // keeps the entry (it holds no secret) for whoever reconciles the audit log.
      logger.error({ audit: full, err: error instanceof Error ? error.message : String(error) }, 'audit entry not stored');
    }
  };
  const denied = async (error: GatewayError): Promise<never> => {
    // The path parameter is the caller's text, not yet checked: kept short and printable.
    const target = call.parameter.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 200) || null;
    if (route.audit) await record({ action: route.audit, targetType: null, targetId: target, outcome: 'failure', changes: { refused: { to: error.message } } });
    throw error;
  };
  if (!route.roles.includes(call.actor.role)) {
    const what = call.actor.role === 'viewer' ? 'is read-only' : `does not allow ${describeMethod(route.method)} /admin/v1${route.path}`;
    await denied(insufficientRole(`Your role (${call.actor.role}) ${what}.`));
  }
  let result: [number, unknown, AuditDetails?];
  try {
    result = await route.action(call);
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'insufficient_role') await denied(error);
    throw error;
  }
  const [status, body, details] = result;
  if (route.audit && details) {
    await record({ action: details.action ?? route.audit, targetType: details.targetType, targetId: details.targetId, changes: details.changes ?? null });
  }
  // Read-only users see alert webhooks by origin only: chat webhooks carry their credential in the path.
  return [status, call.actor.role === 'viewer' ? withoutWebhookPaths(body) : body];
}
