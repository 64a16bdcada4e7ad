import { startEmbeddedGateway } from './embedded-gateway.js';

// `npm start`: the whole gateway in one process.
const gateway = await startEmbeddedGateway().catch((error: Error) => {
  process.stderr.write(`Switchboard could not start: ${error.message}\n`);
  process.exit(1);
});
process.stdout.write(`Switchboard listening on ${gateway.url} (uWebSockets.js build ${gateway.ingress.build})\n`);
process.stdout.write(`Dashboard: ${gateway.dashboardUrl} (sign in with the admin token)\n`);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    gateway.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
