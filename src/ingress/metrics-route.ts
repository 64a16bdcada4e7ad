import type { TemplatedApp } from 'uWebSockets.js';
import { GatewayError } from '../shared/errors.js';
import { metricsAllowed, metricsContentType, metricsText } from '../shared/observability/metrics-endpoint.js';
import type { RouteWrapper } from './pipeline/request-wrapper.js';

// GET /metrics on the ingress's own port: the process's registry (in the embedded default, the
// workers' series too, as they share the process). Bearer SWITCHBOARD_METRICS_TOKEN when set.

export function registerMetricsRoute(app: TemplatedApp, route: RouteWrapper, token: string | undefined): void {
  app.get('/metrics', route('metrics', { headers: ['authorization'] }, async ({ res, state, headers }) => {
    if (!metricsAllowed(token, headers.authorization ?? '')) {
      throw new GatewayError('invalid_api_key', 'GET /metrics needs the bearer token set in SWITCHBOARD_METRICS_TOKEN.');
    }
    const text = await metricsText();
    if (state.aborted || state.done) return;
    state.done = true;
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('content-type', metricsContentType);
      res.end(text);
    });
  }));
}
