import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildCatalog, CatalogError, parseCatalogText } from '../src/shared/catalog/catalog-loader.js';
import { highestPricing, type ModelDeployment } from '../src/shared/catalog/catalog-types.js';
import { defaultCatalogFile } from '../src/shared/catalog/default-catalog.js';
import { DeploymentHealth } from '../src/workers/deployment-health.js';
import { pickDeployment } from '../src/workers/deployment-picker.js';
import { parseSseText } from './doubles/sse.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello, type CreatedKey } from './support/api-client.js';
import { startEmbeddedDeployment, testUpstreamKey, type TestDeployment } from './support/gateway-harness.js';
import { balancedPrices } from './support/test-catalog.js';

// Deployments, through the public interface: a model served by lb-east and lb-west (two providers
// on the OpenAI double, which records which upstream model each request named). The test catalog
// gives them a 300 ms cool-down after 3 failures in a row. Each test gets a fresh gateway, and with
// it a fresh worker whose deployment health knows nothing yet.

let double: OpenAiProviderDouble;
let deployment: TestDeployment;
let key: CreatedKey;

beforeAll(async () => {
  double = await startOpenAiProviderDouble({ apiKey: testUpstreamKey });
});
beforeEach(async () => {
  double.reset();
  deployment = await startEmbeddedDeployment({ openAiUrl: double.url });
  key = await createKey(deployment, { name: 'balancing' });
}, 30_000);
afterEach(async () => {
  await deployment?.close();
}, 30_000);
afterAll(async () => {
  await double?.close();
});

const count = (model: string) => double.requests.filter((request) => request.model === model).length;

async function ask(model: string, extra: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  const response = await chat(deployment, key.key, { model, messages: hello, ...extra });
  return { status: response.status, body: await response.json() };
}

async function latestAttempts(): Promise<Array<[string | undefined, string]>> {
  const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1`);
  return body.data[0].attempts.map((attempt: { deployment?: string; outcome: string }) => [attempt.deployment, attempt.outcome]);
}

describe('load balancing over deployments', () => {
  it('spreads requests over both deployments and bills each at its own price', async () => {
    const usage = { prompt_tokens: 1000, completion_tokens: 500 };
    double.script('balanced-east', { kind: 'text', text: 'east', usage });
    double.script('balanced-west', { kind: 'text', text: 'west', usage });
    for (let batch = 0; batch < 4; batch += 1) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => ask('svc/balanced')));
      expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    }
    // An even split: fewer than 5 of 40 on one side happens by chance about once in ten million runs.
    expect(count('balanced-east')).toBeGreaterThanOrEqual(5);
    expect(count('balanced-west')).toBeGreaterThanOrEqual(5);
    const entries = await eventually(async () => {
      const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}`);
      expect(body.data).toHaveLength(40);
      return body.data as any[];
    });
    const nanos = (prices: readonly [number, number]) => (1000 * prices[0] + 500 * prices[1]) * 1000;
    for (const entry of entries) {
      const served = entry.attempts[0].deployment;
      expect(served === 'lb-east/balanced-east' || served === 'lb-west/balanced-west').toBe(true);
      expect(Math.round(entry.cost_usd * 1e9)).toBe(nanos(served === 'lb-east/balanced-east' ? balancedPrices.east : balancedPrices.west));
    }
  });

  it('takes a deployment that answers 429 out of rotation for its retry-after, then lets one probe bring it back', async () => {
    double.script('primary-east', { kind: 'error', status: 429, retryAfter: '1' }, { kind: 'text', text: 'east again' });
    double.script('primary-west', { kind: 'text', text: 'west' });
    const first = await ask('svc/primary');
    const limitedAt = Date.now();
    expect(first.body.choices[0].message.content).toBe('west');
    expect(await latestAttempts()).toEqual([['lb-east/primary-east', 'rate_limit'], ['lb-west/primary-west', 'success']]);
    // Past the provider's default 300 ms cool-down, but inside its retry-after of 1 s: still out.
    await sleep(500);
    for (let index = 0; index < 5; index += 1) expect((await ask('svc/primary')).body.choices[0].message.content).toBe('west');
    expect(count('primary-east')).toBe(1);
    await sleep(Math.max(0, limitedAt + 1100 - Date.now()));
    const probe = await ask('svc/primary');
    expect(probe.body.choices[0].message.content).toBe('east again');
    expect(await latestAttempts()).toEqual([['lb-east/primary-east', 'success']]);
    expect((await ask('svc/primary')).body.choices[0].message.content).toBe('east again');
    expect(count('primary-east')).toBe(3);
  });

  it('cools a deployment down after 3 failures in a row; a failed probe restarts the cool-down, a good one ends it', async () => {
    const failing = { kind: 'error', status: 500 } as const;
    double.script('primary-east', failing, failing, failing, failing, { kind: 'text', text: 'east' });
    double.script('primary-west', { kind: 'text', text: 'west' });
    for (let index = 0; index < 3; index += 1) {
      // A failure before the first token moves the request to the model's next deployment.
      expect((await ask('svc/primary')).body.choices[0].message.content).toBe('west');
      expect(await latestAttempts()).toEqual([['lb-east/primary-east', 'server_error'], ['lb-west/primary-west', 'success']]);
    }
    await ask('svc/primary');
    expect(count('primary-east')).toBe(3);
    await sleep(350);
    await ask('svc/primary');
    expect(count('primary-east')).toBe(4);
    expect(await latestAttempts()).toEqual([['lb-east/primary-east', 'server_error'], ['lb-west/primary-west', 'success']]);
    await ask('svc/primary');
    expect(count('primary-east')).toBe(4);
    await sleep(350);
    expect((await ask('svc/primary')).body.choices[0].message.content).toBe('east');
    expect((await ask('svc/primary')).body.choices[0].message.content).toBe('east');
    expect(count('primary-east')).toBe(6);
  });

  it('moves a stream that fails before its first token to the next deployment', async () => {
    double.script('primary-east', { kind: 'midstream_drop', chunksBeforeDrop: 0 });
    double.script('primary-west', { kind: 'text', chunks: ['from', ' west'] });
    const response = await chat(deployment, key.key, { model: 'svc/primary', messages: hello, stream: true });
    const chunks = parseSseText(await response.text()).filter((event) => event.data !== '[DONE]').map((event) => JSON.parse(event.data));
    expect(chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')).toBe('from west');
    await eventually(async () => expect(await latestAttempts()).toEqual([['lb-east/primary-east', 'connection'], ['lb-west/primary-west', 'success']]));
  });

  it('skips a model whose deployments are all cooling down when a fallback can answer, and tries them anyway when none can', async () => {
    double.script('primary-east', { kind: 'error', status: 429, retryAfter: '5' });
    double.script('primary-west', { kind: 'error', status: 429, retryAfter: '5' });
    double.script('alpha', { kind: 'text', text: 'alpha' });
    const limited = await ask('svc/primary');
    expect(limited.status).toBe(429);
    expect(limited.body.error.message).toMatch(/svc\/primary via lb-east\/primary-east: rate limited 429.*svc\/primary via lb-west\/primary-west: rate limited 429/);
    const rescued = await ask('svc/primary', { fallbacks: ['svc/alpha'] });
    expect(rescued.body.model).toBe('svc/alpha');
    expect(await latestAttempts()).toEqual([['lb-east/primary-east, lb-west/primary-west', 'cooling_down'], ['double/alpha', 'success']]);
    expect(count('primary-east') + count('primary-west')).toBe(2);
    // As the only target, a cooling model is still asked: the gateway never refuses on its own.
    const lastResort = await chat(deployment, key.key, { model: 'svc/primary', messages: hello });
    expect(lastResort.status).toBe(429);
    expect(Number(lastResort.headers.get('retry-after'))).toBe(5);
    expect(count('primary-east') + count('primary-west')).toBe(4);
  });
});

describe('deployment choice (unit)', () => {
  const deployments = (weights: number[]): ModelDeployment[] =>
    weights.map((weight, index) => ({ id: `p${index}/m`, provider: `p${index}`, upstreamModel: 'm', weight, pricing: { promptUsdPerMillion: 1, completionUsdPerMillion: 1 } }));
  const policy = { cooldownMs: 1000, failuresBeforeCooldown: 3 };

  function shares(candidates: ModelDeployment[], health: DeploymentHealth): number[] {
    const tally = candidates.map(() => 0);
    // Evenly spaced draws make the split exact rather than statistical.
    for (let draw = 0; draw < 1000; draw += 1) {
      const pick = pickDeployment(candidates, health, { allowCooling: false, random: () => (draw + 0.5) / 1000 })!;
      tally[candidates.indexOf(pick.deployment)]! += 1;
      health.report(pick.deployment.id, policy, undefined, pick.probe);
    }
    return tally;
  }

  it('splits by weight, and by weight over recent latency once latencies differ beyond jitter', () => {
    const candidates = deployments([3, 1]);
    const health = new DeploymentHealth();
    expect(shares(candidates, health)).toEqual([750, 250]);
    // 100 ms against 300 ms: the second is three times slower, so 3/100 : 1/300 = 9 : 1.
    health.report('p0/m', policy, { kind: 'success', latencyMs: 100 });
    health.report('p1/m', policy, { kind: 'success', latencyMs: 300 });
    expect(shares(candidates, health)).toEqual([900, 100]);
    // Below the 50 ms floor, latency differences do not count.
    const fast = new DeploymentHealth();
    fast.report('p0/m', policy, { kind: 'success', latencyMs: 2 });
    fast.report('p1/m', policy, { kind: 'success', latencyMs: 20 });
    expect(shares(candidates, fast)).toEqual([750, 250]);
  });

  it('lets exactly one probe through after a cool-down; 400s and cancellations do not count as failures', () => {
    let now = 0;
    const health = new DeploymentHealth({ now: () => now });
    const failure = (kind: 'server_error' | 'bad_request' | 'cancelled') => ({ kind: 'failure' as const, failure: { kind, message: kind } });
    health.report('p0/m', policy, failure('server_error'));
    health.report('p0/m', policy, failure('bad_request'));
    health.report('p0/m', policy, failure('cancelled'));
    health.report('p0/m', policy, failure('server_error'));
    expect(health.status('p0/m').state).toBe('healthy');
    health.report('p0/m', policy, failure('server_error'));
    expect(health.status('p0/m')).toEqual({ state: 'cooling', retryInMs: 1000, cause: 'server_error' });
    now = 1000;
    expect(health.begin('p0/m')).toEqual({ probe: true });
    expect(health.status('p0/m').state).toBe('probing');
    expect(health.begin('p0/m')).toEqual({ probe: false });
    health.report('p0/m', policy, { kind: 'success', latencyMs: 80 }, true);
    expect(health.status('p0/m').state).toBe('healthy');
    // A provider asking for a pause with retry-after gets it at once, for as long as it asked.
    health.report('p0/m', policy, { kind: 'failure', failure: { kind: 'overloaded', status: 503, message: 'busy', retryAfterSeconds: 2.5 } });
    expect(health.status('p0/m')).toEqual({ state: 'cooling', retryInMs: 2500, cause: 'overloaded' });
  });
});

describe('catalog deployments', () => {
  const base = 'providers:\n  a: { api: openai, base_url: "http://a.test/v1" }\n  b: { api: openai, base_url: "http://b.test/v1", cooldown_ms: 5000 }\nrouting: { cooldown_ms: 1000, failures_before_cooldown: 2 }\nmodels:\n';
  const pricing = 'pricing: { prompt_usd_per_million: 1, completion_usd_per_million: 2 }';

  it('reads both model forms, with weights, price overrides and cool-down settings', () => {
    const catalog = buildCatalog(
      parseCatalogText(
        `${base}  - { id: svc/one, provider: a, upstream_model: m1, context_length: 1000, ${pricing} }\n` +
          `  - { id: svc/two, context_length: 1000, ${pricing}, deployments: [{ provider: a, upstream_model: m2, weight: 3 }, { provider: b, upstream_model: m2, pricing: { prompt_usd_per_million: 5, completion_usd_per_million: 1 } }] }\n`,
        'catalog.yaml',
      ),
      {},
    );
    expect(catalog.models.get('svc/one')!.deployments).toEqual([{ id: 'a/m1', provider: 'a', upstreamModel: 'm1', weight: 1, pricing: { promptUsdPerMillion: 1, completionUsdPerMillion: 2 } }]);
    const two = catalog.models.get('svc/two')!;
    expect(two.deployments.map((entry) => [entry.id, entry.weight, entry.pricing.promptUsdPerMillion])).toEqual([['a/m2', 3, 1], ['b/m2', 1, 5]]);
    expect([two.provider, two.upstreamModel]).toEqual(['a', 'm2']);
    expect(highestPricing(two)).toEqual({ promptUsdPerMillion: 5, completionUsdPerMillion: 2 });
    expect(catalog.providers.get('a')!.cooldown).toEqual({ cooldownMs: 1000, failuresBeforeCooldown: 2 });
    expect(catalog.providers.get('b')!.cooldown).toEqual({ cooldownMs: 5000, failuresBeforeCooldown: 2 });
  });

  it.each([
    ['both forms at once', `  - { id: svc/x, provider: a, upstream_model: m, context_length: 1000, ${pricing}, deployments: [{ provider: a, upstream_model: m }] }\n`, /models\.0\.deployments: give either/],
    ['neither form', `  - { id: svc/x, context_length: 1000, ${pricing} }\n`, /models\.0\.provider: Required/],
    ['an unknown provider', `  - { id: svc/x, context_length: 1000, ${pricing}, deployments: [{ provider: zz, upstream_model: m }] }\n`, /provider 'zz'/],
    ['a repeated deployment', `  - { id: svc/x, context_length: 1000, ${pricing}, deployments: [{ provider: a, upstream_model: m }, { provider: a, upstream_model: m }] }\n`, /a\/m twice/],
  ])('refuses %s', (_name, models, message) => {
    expect(() => buildCatalog(parseCatalogText(base + models, 'catalog.yaml'), {})).toThrow(CatalogError);
    expect(() => buildCatalog(parseCatalogText(base + models, 'catalog.yaml'), {})).toThrow(message);
  });

  it('serves Anthropic and Gemini through their native APIs in the default catalog of 20+ models', () => {
    const catalog = buildCatalog(defaultCatalogFile, {});
    expect(catalog.models.size).toBeGreaterThanOrEqual(20);
    expect(catalog.providers.get('anthropic')).toMatchObject({ api: 'anthropic', baseUrl: 'https://api.anthropic.com/v1' });
    expect(catalog.providers.get('google')).toMatchObject({ api: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com/v1beta' });
    expect(catalog.models.get('svc/llama-3.3-70b')!.deployments.map((entry) => entry.provider)).toEqual(['groq', 'together']);
  });
});
