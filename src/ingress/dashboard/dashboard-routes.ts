import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { AdminTokenGuard } from '../admin-token-guard.js';
import { runAdminRoute } from '../admin-access.js';
import { publicPrincipal } from '../admin-users.js';
import { auditActor } from '../../shared/access/principal-lookup.js';
import { adminRoutes, adminTokenGuard, type AdminRoute } from '../admin-routes.js';
import { replyJson, type ReplyState } from '../http-reply.js';
import { modelsListBody } from '../models-route.js';
import { payloadLogRoutes } from '../payload-log-routes.js';
import { deploymentStates, hasInProcessWorkers } from '../../shared/observability/metrics.js';
import { rootPrincipal, type Principal } from '../../shared/access/principal.js';
import type { DashboardSignInSettings } from '../../shared/config.js';
import type { IngressContext } from '../server.js';
import { dashboardRouteOptions, DashboardError, notFound, replyAsset, replyFailure, replyRedirect, snapshot, type RequestSnapshot } from './dashboard-http.js';
import { OidcSignIn } from './oidc-sign-in.js';
import { registerOidcRoutes } from './oidc-routes.js';
import { DashboardSessions, readCookie, sessionCookie, sessionCookieName, SessionSigner, type Session } from './session.js';
import { sessionPrincipal } from './session-principal.js';
import { loadAssets, type AssetTable } from './static-assets.js';

// The dashboard's routes: the page and its files, sign-in/sign-out, and JSON endpoints under
// /dashboard/api that run the admin API's own actions behind a session cookie instead of the
// bearer token, as the session's principal (so the admin API's role checks and audit log apply).
// Anything that changes state must come from the dashboard's own origin and carry the session's
// CSRF token in x-csrf-token. Single sign-on's browser routes are in oidc-routes.ts.

export interface DashboardServices {
  context: IngressContext;
  signer: SessionSigner;
  sessions: DashboardSessions;
  /** Shared with the bearer admin API: guesses through either count against one backoff. */
  guard: AdminTokenGuard;
  assets: AssetTable;
  actions: AdminRoute[];
  modelsBody: string;
  signIn: DashboardSignInSettings;
  oidc?: OidcSignIn;
}

export function createDashboardServices(context: IngressContext, signIn: DashboardSignInSettings): DashboardServices {
  const signer = new SessionSigner(context.admin.adminToken);
  return {
    signIn,
    oidc: signIn.oidc && new OidcSignIn(signIn.oidc, context.admin.adminToken),
    context,
    signer,
    sessions: new DashboardSessions(signer, context.admin.store),
    guard: adminTokenGuard(context.admin),
    assets: loadAssets(),
    actions: [...adminRoutes(context.admin), ...payloadLogRoutes(context.admin.store)],
    modelsBody: modelsListBody(context.catalog),
  };
}

/**
 * read: a valid session; change: also same origin, JSON bodies and the CSRF token; sign-in: same
 * origin only; probe: no requirement (the handler sees whether there is a session).
 */
type Access = 'read' | 'change' | 'sign-in' | 'probe';

interface ApiCall {
  res: HttpResponse;
  state: ReplyState;
  request: RequestSnapshot;
  session?: Session;
  principal?: Principal;
  body?: unknown;
}

type ApiHandler = (call: ApiCall) => Promise<[number, unknown, Array<[string, string]>?]>;

export function registerDashboardRoutes(app: TemplatedApp, services: DashboardServices): void {
  const { signer, sessions, guard, assets, context, signIn } = services;
  const { logger, store } = context.admin;

  /** The cookie's session and who it acts for, when it is valid and its user may still sign in. */
  async function currentSession(request: RequestSnapshot): Promise<{ session?: Session; principal?: Principal }> {
    const session = await sessions.verify(readCookie(request.cookie, sessionCookieName));
    const principal = session && (await sessionPrincipal(session, store, signIn.tokenSignIn));
    return principal ? { session, principal } : {};
  }

  async function requireSession(request: RequestSnapshot): Promise<{ session: Session; principal: Principal }> {
    const { session, principal } = await currentSession(request);
    if (!session || !principal) throw new DashboardError(401, 'session_required', 'Sign in to the dashboard first; the session is missing, has expired or was ended.');
    return { session, principal };
  }

  function refuseForgery(request: RequestSnapshot, session: Session | undefined, withBody: boolean): void {
    if (request.origin !== request.ownOrigin) throw new DashboardError(403, 'cross_site_request', 'Requests that change anything must come from the dashboard page itself.');
    if (withBody && !/^application\/json\b/i.test(request.contentType)) throw new DashboardError(415, 'unsupported_media_type', 'Send JSON with Content-Type: application/json.');
    if (session && !signer.csrfMatches(session, request.csrfToken)) throw new DashboardError(403, 'csrf_token_invalid', 'The CSRF token is missing or does not belong to this session; reload the page.');
  }

  function api(method: AdminRoute['method'], pattern: string, access: Access, withBody: boolean, handler: ApiHandler): void {
    const options = dashboardRouteOptions(pattern.includes(':') ? 1 : 0, withBody);
    app[method](pattern, context.route(`dashboard ${method} ${pattern}`, options, async (call) => {
      const { res, state, body } = call;
      const request = snapshot(call);
      // Session and origin are checked from the headers before the body is wanted.
      const { session, principal } = access === 'probe' ? await currentSession(request) : access === 'sign-in' ? {} : await requireSession(request);
      if (access === 'change' || access === 'sign-in') refuseForgery(request, session, withBody);
      const parsed = body ? await body.json() : undefined;
      if (body && parsed === undefined) return;
      const [status, result, headers] = await handler({ res, state, request, session, principal, body: parsed });
      replyJson(res, state, status, typeof result === 'string' ? result : JSON.stringify(result), headers);
    }));
  }

  // Which sign-ins this dashboard offers, for the sign-in page.
  api('get', '/dashboard/api/sign-in-methods', 'probe', false, async () => [200, { token: signIn.tokenSignIn, oidc: signIn.oidc ? { label: signIn.oidc.label, start: '/dashboard/auth/oidc/start' } : null }]);
  api('post', '/dashboard/api/session', 'sign-in', true, async ({ request, body }) => {
    if (!signIn.tokenSignIn) throw new DashboardError(403, 'token_sign_in_disabled', 'Signing in with the admin token is turned off here (SWITCHBOARD_DASHBOARD_TOKEN_SIGN_IN=off); use single sign-on.');
    const seconds = guard.waitSeconds(request.client);
    if (seconds > 0) {
      throw new DashboardError(429, 'too_many_attempts', `Too many failed sign-ins; try again in ${seconds} s.`, [['retry-after', String(seconds)]]);
    }
    const token = body && typeof body === 'object' && typeof (body as { token?: unknown }).token === 'string' ? (body as { token: string }).token : '';
    if (!guard.verify(request.client, token)) {
      logger.warn({ client: request.client }, 'dashboard sign-in refused');
      await store.appendAudit({ actorKind: 'anonymous', actorId: '', actorLabel: '', action: 'session.sign_in_failed', client: request.client, changes: { method: { to: 'admin_token' } }, outcome: 'failure' });
      throw new DashboardError(401, 'sign_in_failed', 'Sign-in failed.');
    }
    const issued = signer.issue('root');
    await store.appendAudit({ ...auditActor(rootPrincipal), action: 'session.signed_in', client: request.client, changes: { method: { to: 'admin_token' } } });
    logger.info({ client: request.client }, 'dashboard sign-in');
    return [200, sessionBody(issued, rootPrincipal), [['set-cookie', sessionCookie(issued.cookieValue, signer.ttlMs / 1000, request.secure)]]];
  });
  // Answers 200 either way, so that a signed-out page load logs no failed request in the browser.
  api('get', '/dashboard/api/session', 'probe', false, async ({ session, principal }) => [200, session && principal ? sessionBody({ ...session, csrfToken: signer.csrfToken(session.id) }, principal) : { signed_in: false }]);
  api('del', '/dashboard/api/session', 'change', false, async ({ request, session, principal }) => {
    await sessions.end(session!);
    await store.appendAudit({ ...auditActor(principal!), action: 'session.signed_out', client: request.client });
    return [200, { signed_in: false }, [['set-cookie', sessionCookie('', 0, request.secure)]]];
  });

  // Sign out everywhere: every session of this user, on every ingress (a lost laptop, a shared machine).
  api('del', '/dashboard/api/sessions', 'change', false, async ({ request, principal }) => {
    if (principal!.kind !== 'user') throw new DashboardError(400, 'not_a_user', 'Sessions of the admin token all end when the admin token changes; sign out here with DELETE /dashboard/api/session.');
    await store.endUserSessions(principal!.id);
    await store.appendAudit({ ...auditActor(principal!), action: 'session.signed_out', targetType: 'user', targetId: principal!.id, client: request.client, changes: { everywhere: { to: true } } });
    return [200, { signed_in: false }, [['set-cookie', sessionCookie('', 0, request.secure)]]];
  });

  api('get', '/dashboard/api/models', 'read', false, async () => [200, services.modelsBody]);
  // Cool-downs as this process's workers see them (the embedded default: all of them; scaled out: none, see Prometheus).
  api('get', '/dashboard/api/deployments', 'read', false, async () => [200, { object: 'list', in_process_workers: hasInProcessWorkers(), data: [...deploymentStates()].map(([id, cooling]) => ({ id, cooling })) }]);
  for (const route of services.actions) {
    // Roles and the audit log are applied by runAdminRoute, as for the bearer API.
    api(route.method, `/dashboard/api${route.path}`, route.method === 'get' ? 'read' : 'change', route.withBody, ({ res, state, request, body, principal }) =>
      runAdminRoute(route, store, logger, { res, state, parameter: request.parameter, query: request.query, body, actor: principal!, client: request.client }),
    );
  }
  if (services.oidc) registerOidcRoutes(app, { context, oidc: services.oidc, signer, store, logger });

  const staticRoute = (pattern: string, serve: (request: RequestSnapshot, res: HttpResponse, state: ReplyState) => void) =>
    app.get(pattern, context.route(`dashboard ${pattern}`, dashboardRouteOptions(0, false), (call) => serve(snapshot(call), call.res, call.state)));
  staticRoute('/dashboard', (_request, res) => replyRedirect(res, '/dashboard/'));
  staticRoute('/dashboard/', (request, res, state) => replyAsset(res, state, request, assets.page, 'no-cache'));
  for (const [prefix, table] of [['/dashboard/assets/', assets.files], ['/dashboard/vendor/', assets.vendor]] as const) {
    staticRoute(`${prefix}*`, (request, res, state) => {
      const asset = table.get(request.url.slice(prefix.length));
      if (asset) replyAsset(res, state, request, asset, 'no-cache');
      else replyFailure(res, state, notFound());
    });
  }
  app.any('/dashboard/*', context.route('dashboard unknown', dashboardRouteOptions(0, false), () => {
    throw notFound();
  }));
}

function sessionBody(session: Session & { csrfToken: string }, principal: Principal): Record<string, unknown> {
  return { signed_in: true, csrf_token: session.csrfToken, expires_at: new Date(session.expiresAt).toISOString(), principal: publicPrincipal(principal) };
}
