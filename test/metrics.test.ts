import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { chat, createKey, eventually, hello } from './support/api-client.js';
import { startDeployment, type TestDeployment } from './support/gateway-harness.js';
import { promtoolCheck, total } from './support/prometheus-text.js';
import { startPrometheus } from './support/prometheus-server.js';
import { scaledOutAvailable, type ScaledDeployment } from './support/scaled-harness.js';

// Prometheus metrics through the public interface: GET /metrics on the ingress (and, scaled out,
// on each worker's SWITCHBOARD_METRICS_PORT), behind SWITCHBOARD_METRICS_TOKEN, validated by
// promtool, with counters read before and after real requests; scaled out, a real Prometheus
// server scrapes all four processes.

const metricsToken = 'metrics-scrape-token-7c1e9b';
const unknownModel = 'svc/client-chosen-model-name-9f3a';

interface Scraper {
  deployment: TestDeployment;
  /** /metrics of every process of the deployment. */
  scrapeAll(): Promise<string[]>;
  /** host:port of every process's metrics endpoint. */
  targets(): string[];
}

async function scrape(url: string, token = metricsToken): Promise<Response> {
  return fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
}

async function scrapeText(url: string): Promise<string> {
  const response = await scrape(url);
  expect(response.status).toBe(200);
  return response.text();
}

function describeMetrics(kind: 'embedded' | 'scaled') {
  describe(`${kind} deployment`, () => {
    let double: OpenAiProviderDouble;
    const context = {} as Scraper;

    beforeAll(async () => {
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      const deployment = await startDeployment(kind, {
        openAiUrl: double.url,
        environment: { SWITCHBOARD_METRICS_TOKEN: metricsToken, ...(kind === 'scaled' ? { SWITCHBOARD_METRICS_PORT: '0' } : {}) },
      });
      context.deployment = deployment;
      const workerUrls = () => kind === 'scaled'
        ? (deployment as ScaledDeployment).workers.map((worker) => /Worker metrics on (http:\/\/[\d.]+:\d+)\/metrics/.exec(worker.output())![1]!)
        : [];
      context.scrapeAll = () => Promise.all([...deployment.urls, ...workerUrls()].map(scrapeText));
      context.targets = () => [...deployment.urls, ...workerUrls()].map((url) => new URL(url).host);
    }, 90_000);
    afterAll(async () => {
      await context.deployment?.close();
      await double?.close();
    }, 30_000);

    it('serves /metrics on every process only with the bearer token, in a format promtool accepts', async () => {
      for (const url of [...context.deployment.urls]) {
        expect((await fetch(`${url}/metrics`)).status).toBe(401);
        expect((await scrape(url, 'wrong-token')).status).toBe(401);
      }
      const scrapes = await context.scrapeAll();
      expect(scrapes.length).toBe(kind === 'scaled' ? 4 : 1);
      for (const text of scrapes) {
        const check = await promtoolCheck(text);
        // The format parses; the only lint remarks are on prom-client's own default gauges
        // nodejs_active_{handles,requests,resources}_total, whose names it fixes, never on ours.
        const remarks = check.output.split('\n').filter(Boolean);
        expect(remarks.every((remark) => /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/.test(remark)), check.output).toBe(true);
        expect(check.code === 0 || remarks.length > 0).toBe(true);
        // The default process metrics come with every process.
        expect(text).toContain('process_cpu_user_seconds_total');
        expect(text).toContain('nodejs_eventloop_lag_seconds');
      }
      const all = scrapes.join('\n');
      for (const name of ['switchboard_requests_total', 'switchboard_request_duration_seconds', 'switchboard_time_to_first_token_seconds', 'switchboard_tokens_total', 'switchboard_cost_usd_total', 'switchboard_attempts_total', 'switchboard_deployment_cooling', 'switchboard_refusals_total', 'switchboard_open_streams', 'switchboard_queue_waiting', 'switchboard_queue_wait_seconds', 'switchboard_jobs_active']) {
        expect(all, name).toContain(`# TYPE ${name} `);
      }
    });

    it('counts requests, tokens, cost, attempts, first tokens and refusals as they happen, with bounded labels', async () => {
      const key = await createKey(context.deployment, { name: 'metrics key' });
      const poor = await createKey(context.deployment, { name: 'metrics poor key', budget_usd: 0.000001 });
      const before = await context.scrapeAll();

      double.script('alpha', { kind: 'text', text: 'counted', usage: { prompt_tokens: 10, completion_tokens: 5 } });
      expect((await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      double.script('beta', { kind: 'text', chunks: ['one', ' two'], usage: { prompt_tokens: 7, completion_tokens: 2 } });
      const stream = await chat(context.deployment, key.key, { model: 'svc/beta', stream: true, messages: hello });
      expect(stream.status).toBe(200);
      await stream.text();
      double.script('gamma', { kind: 'error', status: 429 });
      double.script('delta', { kind: 'text', text: 'fallback', usage: { prompt_tokens: 1, completion_tokens: 1 } });
      expect((await chat(context.deployment, key.key, { model: 'svc/gamma', fallbacks: ['svc/delta'], messages: hello })).status).toBe(200);
      expect((await chat(context.deployment, key.key, { model: unknownModel, messages: hello })).status).toBe(404);
      expect((await chat(context.deployment, poor.key, { model: 'svc/alpha', messages: hello })).status).toBe(402);

      const after = await eventually(async () => {
        const scrapes = await context.scrapeAll();
        const delta = (name: string, labels: Record<string, string>) => total(scrapes, name, labels) - total(before, name, labels);
        expect(delta('switchboard_attempts_total', { model: 'svc/delta', outcome: 'success' })).toBe(1);
        return { scrapes, delta };
      }, 5000);
      const { delta, scrapes } = after;
      const chatRequests = { surface: 'chat.completions' };
      expect(delta('switchboard_requests_total', { ...chatRequests, model: 'svc/alpha', served_model: 'svc/alpha', status: '200' })).toBe(1);
      expect(delta('switchboard_requests_total', { ...chatRequests, model: 'svc/beta', served_model: 'svc/beta', status: '200' })).toBe(1);
      expect(delta('switchboard_requests_total', { ...chatRequests, model: 'svc/gamma', served_model: 'svc/delta', status: '200' })).toBe(1);
      expect(delta('switchboard_requests_total', { ...chatRequests, model: 'none', status: '404' })).toBe(1);
      expect(delta('switchboard_requests_total', { ...chatRequests, model: 'svc/alpha', status: '402' })).toBe(1);
      expect(delta('switchboard_refusals_total', { reason: 'model_not_found' })).toBe(1);
      expect(delta('switchboard_refusals_total', { reason: 'budget_exceeded' })).toBe(1);
      expect(delta('switchboard_request_duration_seconds_count', { surface: 'chat.completions', model: 'svc/alpha' })).toBe(2);
      expect(delta('switchboard_time_to_first_token_seconds_count', { surface: 'chat.completions', model: 'svc/beta' })).toBe(1);
      expect(delta('switchboard_time_to_first_token_seconds_count', { surface: 'chat.completions', model: 'svc/alpha' })).toBe(0);
      expect(delta('switchboard_tokens_total', { model: 'svc/alpha', type: 'prompt' })).toBe(10);
      expect(delta('switchboard_tokens_total', { model: 'svc/alpha', type: 'completion' })).toBe(5);
      expect(delta('switchboard_tokens_total', { model: 'svc/beta', type: 'prompt' })).toBe(7);
      // svc/alpha costs $1 / $2 per million tokens: 10 * 1e-6 + 5 * 2e-6.
      expect(delta('switchboard_cost_usd_total', { model: 'svc/alpha' })).toBeCloseTo(0.00002, 12);
      expect(delta('switchboard_attempts_total', { model: 'svc/gamma', deployment: 'double/gamma', outcome: 'rate_limit' })).toBe(1);
      expect(delta('switchboard_queue_wait_seconds_count', {})).toBe(3);
      expect(total(scrapes, 'switchboard_open_streams')).toBe(0);
      expect(total(scrapes, 'switchboard_jobs_active')).toBe(0);
      const text = scrapes.join('\n');
      // Neither a client's own model name nor a key becomes a label value.
      expect(text).not.toContain(unknownModel);
      for (const secret of [key.key, poor.key, key.id, 'upstream-secret-key']) expect(text).not.toContain(secret);
    }, 30_000);

    it('counts the Responses and Embeddings surfaces under their own names', async () => {
      const key = await createKey(context.deployment, { name: 'surfaces key' });
      const before = await context.scrapeAll();
      const post = (path: string, body: unknown) => fetch(`${context.deployment.url()}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const responses = await post('/v1/responses', { model: 'svc/zeta', input: 'Say hello', stream: true });
      expect(responses.status).toBe(200);
      await responses.text();
      const embeddings = await post('/v1/embeddings', { model: 'svc/embed-alpha', input: 'vector please' });
      expect(embeddings.status).toBe(200);
      await eventually(async () => {
        const scrapes = await context.scrapeAll();
        const delta = (name: string, labels: Record<string, string>) => total(scrapes, name, labels) - total(before, name, labels);
        expect(delta('switchboard_requests_total', { surface: 'responses', model: 'svc/zeta', served_model: 'svc/zeta', status: '200' })).toBe(1);
        expect(delta('switchboard_time_to_first_token_seconds_count', { surface: 'responses', model: 'svc/zeta' })).toBe(1);
        expect(delta('switchboard_requests_total', { surface: 'embeddings', model: 'svc/embed-alpha', served_model: 'svc/embed-alpha', status: '200' })).toBe(1);
        expect(delta('switchboard_attempts_total', { model: 'svc/embed-alpha', outcome: 'success' })).toBe(1);
        expect(delta('switchboard_tokens_total', { model: 'svc/embed-alpha', type: 'prompt' })).toBeGreaterThan(0);
        expect(total(scrapes, 'switchboard_open_streams')).toBe(0);
      }, 5000);
    }, 30_000);

    it('reports a deployment cooling down after failures', async () => {
      const key = await createKey(context.deployment, { name: 'cooling key' });
      // lb-* providers cool down after 3 failures in a row (a 429 at once), for 300 ms by default.
      double.script('primary-east', { kind: 'error', status: 429, retryAfter: '30' });
      double.script('primary-west', { kind: 'text', text: 'west' });
      // Scaled out each worker keeps its own health: enough requests that both see the 429.
      for (let index = 0; index < 6; index++) expect((await chat(context.deployment, key.key, { model: 'svc/primary', messages: hello })).status).toBe(200);
      const scrapes = await context.scrapeAll();
      expect(total(scrapes, 'switchboard_deployment_cooling', { deployment: 'lb-east/primary-east' })).toBeGreaterThanOrEqual(1);
      expect(total(scrapes, 'switchboard_deployment_cooling', { deployment: 'lb-west/primary-west' })).toBe(0);
    }, 30_000);

    if (kind === 'scaled') {
      it('is scraped by a real Prometheus server on every ingress and worker process', async () => {
        const prometheus = await startPrometheus(context.targets(), metricsToken);
        try {
          const up = await eventually(async () => {
            const result = await prometheus.query('up{job="switchboard"}');
            expect(result.length).toBe(4);
            expect(result.every((series) => series.value[1] === '1')).toBe(true);
            return result;
          }, 20_000);
          expect(up.map((series) => series.metric.instance).sort()).toEqual(context.targets().sort());
          const key = await createKey(context.deployment, { name: 'prometheus key' });
          const [before] = await prometheus.query('sum(switchboard_requests_total{model="svc/epsilon"}) or vector(0)');
          for (let index = 0; index < 3; index++) expect((await chat(context.deployment, key.key, { model: 'svc/epsilon', messages: hello })).status).toBe(200);
          await eventually(async () => {
            const [requests] = await prometheus.query('sum(switchboard_requests_total{model="svc/epsilon"})');
            expect(Number(requests?.value[1]) - Number(before?.value[1] ?? 0)).toBe(3);
            const [attempts] = await prometheus.query('sum(switchboard_attempts_total{model="svc/epsilon",outcome="success"})');
            expect(Number(attempts?.value[1])).toBe(3);
            const waiting = await prometheus.query('switchboard_queue_waiting');
            // Read from the queue by each ingress (a worker's gauge stays 0).
            expect(waiting.length).toBe(4);
          }, 20_000);
        } finally {
          await prometheus.close();
        }
      }, 60_000);
    }
  });
}

describeMetrics('embedded');
if (scaledOutAvailable) describeMetrics('scaled');
else describe.skip('scaled-out metrics (REDIS_URL / DATABASE_URL not set)', () => it('needs REDIS_URL and DATABASE_URL', () => undefined));
