import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { DashboardSignInSettings } from '../../shared/config.js';
import type { IngressContext } from '../server.js';
import { listenExclusive } from '../listen-exclusive.js';
import { loadUws } from '../uws-loader.js';
import { dashboardRouteOptions, notFound, replyRedirect } from './dashboard-http.js';
import { createDashboardServices, registerDashboardRoutes, type DashboardServices } from './dashboard-routes.js';

// The web dashboard at /dashboard on the ingress, and also on a port of its own when
// SWITCHBOARD_DASHBOARD_PORT is set (0 picks a free port). Use: pass `dashboard.extend` as the
// ingress's `extend` option, then `await dashboard.listen()` once the ingress has started.

/** SWITCHBOARD_DASHBOARD_PORT, or undefined when the dashboard shares the ingress port only. */
export function dashboardPort(environment: NodeJS.ProcessEnv): number | undefined {
  const raw = environment.SWITCHBOARD_DASHBOARD_PORT;
  if (raw === undefined || raw.trim() === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`SWITCHBOARD_DASHBOARD_PORT must be a port number, got '${raw}'.`);
  return port;
}

export class Dashboard {
  private services?: DashboardServices;
  private listenSocket?: us_listen_socket;

  constructor(private readonly options: { port?: number; host: string; logger: Logger; signIn: DashboardSignInSettings }) {}

  /** The ingress's `extend` hook: serves the dashboard on the ingress's own app. */
  readonly extend = (app: TemplatedApp, context: IngressContext): void => {
    this.services ??= createDashboardServices(context, this.options.signIn);
    registerDashboardRoutes(app, this.services);
  };

  /** Starts the dashboard's own listener when a port is configured; returns its port. */
  async listen(): Promise<number | undefined> {
    if (this.options.port === undefined) return undefined;
    if (!this.services) throw new Error('Attach the dashboard to an ingress (its extend hook) before listen().');
    const { uws } = loadUws();
    const app = uws.App();
    registerDashboardRoutes(app, this.services);
    const { route } = this.services.context;
    app.get('/', route('dashboard root', dashboardRouteOptions(0, false), ({ res }) => replyRedirect(res, '/dashboard/')));
    app.any('/*', route('dashboard unknown', dashboardRouteOptions(0, false), () => {
      throw notFound();
    }));
    const { host, port } = this.options;
    this.listenSocket = await listenExclusive(app, host, port, 'The dashboard (SWITCHBOARD_DASHBOARD_PORT)');
    const bound = uws.us_socket_local_port(this.listenSocket);
    this.options.logger.info({ port: bound }, 'dashboard listening on its own port');
    return bound;
  }

  close(): void {
    if (!this.listenSocket) return;
    loadUws().uws.us_listen_socket_close(this.listenSocket);
    this.listenSocket = undefined;
  }
}
