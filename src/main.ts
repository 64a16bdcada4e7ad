import { startEmbeddedGateway } from './embedded-gateway.js';
import { readDashboardSignIn, signInDescription } from './shared/config.js';
import { listenAddress } from './shared/listen-address.js';
import { exitOnShutdownSignal } from './shared/shutdown.js';

// `npm start`: the whole gateway in one process. Started as `node --import tsx src/main.ts` (no
// wrapper process), so the signals npm or a Procfile runner forward reach the process that serves.

const gateway = await startEmbeddedGateway().catch((error: Error) => {
  process.stderr.write(`Switchboard could not start: ${error.message}\n`);
  process.exit(1);
});
const { host } = gateway.config;
const api = listenAddress(host, gateway.port);
const dashboard = listenAddress(host, Number(new URL(gateway.dashboardUrl).port || 80));
process.stdout.write(`Switchboard listening on ${api.describe} (uWebSockets.js build ${gateway.ingress.build})\n`);
process.stdout.write(`Dashboard: ${dashboard.local}/dashboard/ (sign in with ${signInDescription(readDashboardSignIn(process.env))})\n`);

exitOnShutdownSignal(undefined, 'gateway', () => gateway.close());
