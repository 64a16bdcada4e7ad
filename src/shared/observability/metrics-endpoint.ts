import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { tokensEqual } from '../keys/api-key.js';
import { metricsRegistry } from './metrics.js';

// What every process's /metrics answers: the registry in Prometheus's text format, behind
// SWITCHBOARD_METRICS_TOKEN (a bearer token) when it is set. Workers, which have no HTTP server of
// their own, serve it on SWITCHBOARD_METRICS_PORT with node:http (scrapes are rare; speed is moot).

export const metricsContentType = metricsRegistry.contentType;

/** The token the scrape must present, or undefined when /metrics is open. */
export function metricsToken(environment: NodeJS.ProcessEnv): string | undefined {
  return environment.SWITCHBOARD_METRICS_TOKEN || undefined;
}

export function metricsAllowed(token: string | undefined, authorization: string): boolean {
  if (token === undefined) return true;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match !== null && tokensEqual(match[1]!, token);
}

export function metricsText(): Promise<string> {
  return metricsRegistry.metrics();
}

/** The port of a worker's metrics server (SWITCHBOARD_METRICS_PORT), or undefined for none. */
export function metricsPort(environment: NodeJS.ProcessEnv): number | undefined {
  const raw = environment.SWITCHBOARD_METRICS_PORT;
  if (raw === undefined || raw === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`SWITCHBOARD_METRICS_PORT must be a port number, got '${raw}'.`);
  return port;
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(port: number, host: string, token: string | undefined, logger: Logger): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Only GET /metrics is served here.\n');
      return;
    }
    if (!metricsAllowed(token, request.headers.authorization ?? '')) {
      response.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end('A bearer token (SWITCHBOARD_METRICS_TOKEN) is required.\n');
      return;
    }
    metricsText().then(
      (text) => response.writeHead(200, { 'content-type': metricsContentType }).end(text),
      (error: Error) => {
        logger.error({ err: error.message }, 'metrics collection failed');
        response.writeHead(500, { 'content-type': 'text/plain' }).end('Metrics collection failed.\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
