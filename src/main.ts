import { startEmbeddedGateway } from './embedded-gateway.js';
import { exitOnShutdownSignal } from './shared/shutdown.js';

// `npm start`: the whole gateway in one process.
const gateway = await startEmbeddedGateway().catch((error: Error) => {
  process.stderr.write(`Switchboard could not start: ${error.message}\n`);
  process.exit(1);
});
process.stdout.write(`Switchboard listening on ${gateway.url} (uWebSockets.js build ${gateway.ingress.build})\n`);
process.stdout.write(`Dashboard: ${gateway.dashboardUrl} (sign in with the admin token)\n`);

exitOnShutdownSignal(undefined, 'gateway', () => gateway.close());
