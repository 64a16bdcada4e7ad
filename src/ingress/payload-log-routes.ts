import type { TemplatedApp } from 'uWebSockets.js';
import { z } from 'zod';
import { GatewayError } from '../shared/errors.js';
import type { Store } from '../shared/store/store.js';
import { adminTokenGuard, type AdminDependencies } from './admin-routes.js';
import { replyJson } from './http-reply.js';
import type { RouteWrapper } from './pipeline/request-wrapper.js';

// The admin side of the opt-in request logs, with the admin API's bearer token:
//   PUT /admin/v1/keys/:id/payload_logging  {"enabled": true | false | null}  (null: the global default)
//   GET /admin/v1/requests/:id/payload      the logged request and answer of one request
// Kept apart from the admin routes so that the logs stay a module of their own.

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
  const guard = adminTokenGuard(dependencies);
  const { store } = dependencies;
  const options = { headers: ['authorization'], parameters: 1, remoteAddress: true } as const;

  app.put('/admin/v1/keys/:id/payload_logging', route('admin put payload_logging', { ...options, body: true }, async ({ res, state, headers, parameters, remoteAddress, body }) => {
    guard.checkBearer(remoteAddress, headers.authorization ?? '');
    const parsed = await body!.json();
    if (parsed === undefined) return;
    const setting = settingSchema.safeParse(parsed);
    if (!setting.success) throw new GatewayError('invalid_value', 'Send {"enabled": true}, {"enabled": false} or {"enabled": null} (follow SWITCHBOARD_PAYLOAD_LOGGING).', { param: 'enabled' });
    const key = await store.getKey(checkedId(parameters[0]!));
    if (!key) throw new GatewayError('not_found', `No key with id '${parameters[0]}'.`, { param: 'id' });
    await store.setPayloadLogging(key.id, setting.data.enabled);
    replyJson(res, state, 200, JSON.stringify({ key_id: key.id, payload_logging: setting.data.enabled }));
  }));

  app.get('/admin/v1/requests/:id/payload', route('admin get payload', options, async ({ res, state, headers, parameters, remoteAddress }) => {
    guard.checkBearer(remoteAddress, headers.authorization ?? '');
    replyJson(res, state, 200, JSON.stringify(await requestLogBody(store, parameters[0]!)));
  }));
}

/** One request's log as the admin API and the dashboard show it; 404 when none was kept. */
export async function requestLogBody(store: Store, id: string): Promise<Record<string, unknown>> {
  const record = await store.getPayload(checkedId(id));
  if (!record) throw new GatewayError('not_found', `No request log for '${id}': logging was off for its key, or the log has been purged.`, { param: 'id' });
  return { id: record.id, object: 'request_log', key_id: record.keyId, created_at: record.createdAt, request: parsedBody(record.request), response: parsedBody(record.response) };
}
