import type { TemplatedApp } from 'uWebSockets.js';
import { z } from 'zod';
import { GatewayError } from '../shared/errors.js';
import type { Store } from '../shared/store/store.js';
import { rootPrincipal, type Principal } from '../shared/access/principal.js';
import { anyRole, insufficientRole, keyEditors, type AdminRoute } from './admin-access.js';
import { isMember, keyInScope, requireKeyInScope } from './admin-access-scope.js';
import { registerAdminRoutes, type AdminDependencies } from './admin-routes.js';
import type { RouteWrapper } from './pipeline/request-wrapper.js';

// The admin side of the opt-in request logs, with the admin API's bearer token:
//   PUT /admin/v1/keys/:id/payload_logging  {"enabled": true | false | null}  (null: the global default)
//   GET /admin/v1/requests/:id/payload      the logged request and answer of one request
// Kept apart from the admin routes so that the logs stay a module of their own; they go through the
// same role checks and audit log (admin-access.ts).

const settingSchema = z.object({ enabled: z.boolean().nullable() }).strict();

function checkedId(id: string): string {
  if (/[\u0000-\u001f\u007f]/.test(id) || id.length > 200) throw new GatewayError('not_found', `Nothing with id '${id.slice(0, 200)}'.`, { param: 'id' });
  return id;
}

function parsedBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function registerPayloadLogRoutes(app: TemplatedApp, dependencies: AdminDependencies, route: RouteWrapper): void {
  registerAdminRoutes(app, dependencies, route, payloadLogRoutes(dependencies.store));
}

/** The two request-log actions, for the bearer API and the dashboard; a member reaches only their projects' keys. */
export function payloadLogRoutes(store: Store): AdminRoute[] {
  return [
    {
      method: 'put', path: '/keys/:id/payload_logging', withBody: true, roles: keyEditors, audit: 'key.updated',
      action: async ({ parameter, body, actor }) => {
        const setting = settingSchema.safeParse(body);
        if (!setting.success) throw new GatewayError('invalid_value', 'Send {"enabled": true}, {"enabled": false} or {"enabled": null} (follow SWITCHBOARD_PAYLOAD_LOGGING).', { param: 'enabled' });
        const key = await store.getKey(checkedId(parameter));
        if (!key) throw new GatewayError('not_found', `No key with id '${parameter}'.`, { param: 'id' });
        requireKeyInScope(actor, key);
        const before = await store.payloadLogging(key.id);
        await store.setPayloadLogging(key.id, setting.data.enabled);
        return [200, { key_id: key.id, payload_logging: setting.data.enabled }, { targetType: 'key', targetId: key.id, changes: { payload_logging: { from: before, to: setting.data.enabled } } }];
      },
    },
    {
      method: 'get', path: '/requests/:id/payload', withBody: false, roles: anyRole,
      action: async ({ parameter, actor }) => [200, await requestLogBody(store, parameter, actor)],
    },
  ];
}

/** One request's log as the admin API and the dashboard show it; 404 when none was kept. */
export async function requestLogBody(store: Store, id: string, actor: Principal = rootPrincipal): Promise<Record<string, unknown>> {
  const record = await store.getPayload(checkedId(id));
  if (record && isMember(actor)) {
    const key = await store.getKey(record.keyId);
    if (!key || !keyInScope(actor, key)) throw insufficientRole(`Request '${id}' was made with a key outside your projects.`);
  }
  if (!record) throw new GatewayError('not_found', `No request log for '${id}': logging was off for its key, or the log has been purged.`, { param: 'id' });
  return { id: record.id, object: 'request_log', key_id: record.keyId, created_at: record.createdAt, request: parsedBody(record.request), response: parsedBody(record.response) };
}
