import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AnthropicProviderDouble } from './doubles/anthropic-provider-double.js';
import type { GeminiProviderDouble } from './doubles/gemini-provider-double.js';
import type { OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { parseSseText } from './doubles/sse.js';
import { adminRequest, chat, createKey, eventually, hello, ledgerView, type CreatedKey } from './support/api-client.js';
import { extendedCatalogFile } from './support/catalog-extension.js';
import { startEmbeddedDeployment, type TestDeployment } from './support/gateway-harness.js';
import { anthropicDoubleKey as anthropicKey, startProviderDoubles, type ProviderDoubles } from './support/provider-doubles.js';
import { testPrices } from './support/test-catalog.js';

// How many provider calls one request may cause, and what the gateway does when a call cannot be
// the provider's fault: duplicate fallbacks are refused, the calls per request are capped (32), a
// request the gateway itself cannot send never cools a deployment down, an upstream that ignores
// `n` still yields n choices, and a Gemini model name cannot walk out of the model path.

const escapingModel = '../../../evil?x=';

let doubles: ProviderDoubles;
let openAi: OpenAiProviderDouble;
let anthropic: AnthropicProviderDouble;
let gemini: GeminiProviderDouble;
let deployment: TestDeployment;
let key: CreatedKey;

beforeAll(async () => {
  doubles = await startProviderDoubles();
  ({ openai: openAi, anthropic, gemini } = doubles);
  // The lb-* deployments cool down for 30 s after three failures: long enough for any test to see.
  const options = { openAiUrl: openAi.url, anthropicUrl: anthropic.url, geminiUrl: gemini.url, balancingCooldownMs: 30_000 };
  const catalog = extendedCatalogFile(
    options,
    [
      { name: 'anthropic-east', api: 'anthropic', baseUrl: anthropic.url, apiKey: anthropicKey },
      { name: 'anthropic-west', api: 'anthropic', baseUrl: anthropic.url, apiKey: anthropicKey },
    ],
    [
      { id: 'svc/claude-a', provider: 'anthropic-double', upstreamModel: 'claude-a' },
      { id: 'svc/claude-b', provider: 'anthropic-double', upstreamModel: 'claude-b' },
      { id: 'svc/claude-twice', deployments: [{ provider: 'anthropic-east', upstreamModel: 'claude-east' }, { provider: 'anthropic-west', upstreamModel: 'claude-west' }] },
      { id: 'svc/gemini-escape', provider: 'gemini-double', upstreamModel: escapingModel },
    ],
  );
  deployment = await startEmbeddedDeployment({ ...options, environment: { SWITCHBOARD_CATALOG: catalog } });
  key = await createKey(deployment, { name: 'provider calls' });
}, 60_000);
beforeEach(() => doubles.reset());
afterAll(async () => {
  await deployment?.close();
  await doubles?.close();
}, 30_000);

async function ask(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const response = await chat(deployment, key.key, { messages: hello, ...body });
  return { status: response.status, body: await response.json() };
}

async function latestEntry(): Promise<any> {
  return eventually(async () => {
    const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1`);
    expect(body.data.length).toBe(1);
    return ledgerView(body.data[0]);
  });
}

describe('duplicate fallbacks', () => {
  it('refuses a fallback equal to the model', async () => {
    const { status, body } = await ask({ model: 'svc/alpha', fallbacks: ['svc/alpha'] });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'invalid_value', param: 'fallbacks[0]' });
    expect(openAi.requests).toHaveLength(0);
  });

  it('refuses a fallback equal to an earlier fallback', async () => {
    const { status, body } = await ask({ model: 'svc/alpha', fallbacks: ['svc/beta', 'svc/gamma', 'svc/beta'] });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'invalid_value', param: 'fallbacks[2]' });
  });
});

describe('the cap of 32 provider calls per request', () => {
  it('refuses at the ingress what the first try of each target would already exceed (n x targets)', async () => {
    // Anthropic has no `n`: 16 calls per model, 48 for three models.
    const { status, body } = await ask({ model: 'svc/claude-test', fallbacks: ['svc/claude-a', 'svc/claude-b'], n: 16 });
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_value');
    expect(body.error.message).toContain('48 provider calls');
    expect(anthropic.requests).toHaveLength(0);
  });

  it('lets n = 16 over six OpenAI targets through: one call each', async () => {
    const { status, body } = await ask({ model: 'svc/alpha', fallbacks: ['svc/beta', 'svc/gamma', 'svc/delta', 'svc/epsilon', 'svc/zeta'], n: 16 });
    expect(status).toBe(200);
    expect(body.choices).toHaveLength(16);
  });

  it('stops the fallback chain at the cap and answers with the failures so far', async () => {
    anthropic.script('claude-east', { kind: 'error', status: 500 });
    anthropic.script('claude-west', { kind: 'error', status: 500 });
    // Two deployments of 16 fanned-out calls each spend all 32 calls; the fallback would be the 33rd.
    const { status, body } = await ask({ model: 'svc/claude-twice', fallbacks: ['svc/alpha'], n: 16 });
    expect(status).toBe(502);
    expect(body.error.message).toContain('stopped after 32 provider calls, the most one request may make');
    expect(openAi.requests).toHaveLength(0);
    expect(anthropic.requests.length).toBeLessThanOrEqual(32);
  });
});

/** A tool schema nested deeper than JSON.stringify's stack reaches: the gateway cannot send it. */
function unserialisableRequest(): string {
  const depth = 200_000;
  const deep = '['.repeat(depth) + ']'.repeat(depth);
  return `{"model":"svc/primary","fallbacks":["svc/alpha"],"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"deep","parameters":{"type":"object","default":${deep}}}}]}`;
}

describe("the gateway's own failures", () => {
  it('never cool a healthy deployment down nor fall back as if the provider had failed', async () => {
    for (let round = 0; round < 3; round += 1) {
      const response = await chat(deployment, key.key, unserialisableRequest());
      const body = await response.json();
      // An error of ours (a 500 here; a gateway that limits JSON depth answers 400 before the worker).
      expect(body.error.code).not.toMatch(/^upstream_/);
      expect([400, 500]).toContain(response.status);
      if (response.status === 500) {
        expect(body.error.code).toBe('internal_error');
        const entry = await latestEntry();
        expect(entry.attempts.map((attempt: any) => [attempt.deployment, attempt.outcome])).toEqual([['lb-east/primary-east', 'internal']]);
      }
    }
    expect(openAi.requests).toHaveLength(0);
    // Had the three counted as connection failures, both deployments of svc/primary would now be
    // cooling down for 30 s, and svc/alpha would answer.
    const { status, body } = await ask({ model: 'svc/primary', fallbacks: ['svc/alpha'] });
    expect(status).toBe(200);
    expect(body.model).toBe('svc/primary');
  });
});

describe('n > 1 on an upstream that ignores n', () => {
  it('non-streaming: fills in the missing choices with one call each and bills every call', async () => {
    // A recorded answer with one choice, whatever n asked for.
    openAi.script('alpha', { kind: 'fixture', file: 'openai-text.response.json' });
    const { status, body } = await ask({ model: 'svc/alpha', n: 3 });
    expect(status).toBe(200);
    expect(body.choices.map((choice: any) => choice.index)).toEqual([0, 1, 2]);
    for (const choice of body.choices) expect(choice.finish_reason).toBe('stop');
    expect(openAi.requests).toHaveLength(3);
    expect(openAi.requests[0]!.body.n).toBe(3);
    expect(openAi.requests.slice(1).map((request) => request.body.n)).toEqual([undefined, undefined]);
    // Each call reported 16 prompt and 363 completion tokens.
    expect(body.usage).toMatchObject({ prompt_tokens: 48, completion_tokens: 1089 });
    const entry = await latestEntry();
    const [prompt, completion] = testPrices.alpha!;
    expect(entry.costNanos).toBe((48 * prompt + 1089 * completion) * 1000);
  });

  it('streaming: every choice the stream opened gets content and a finish, and usage covers every call', async () => {
    openAi.script('alpha', { kind: 'fixture', file: 'openai-text.include_usage.chunks.jsonl' });
    const response = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello, n: 3, stream: true, stream_options: { include_usage: true } });
    expect(response.status).toBe(200);
    const chunks = parseSseText(await response.text()).filter((event) => event.data !== '[DONE]').map((event) => JSON.parse(event.data));
    const opened = new Set<number>();
    const finished = new Map<number, string>();
    const content = new Map<number, string>();
    for (const chunk of chunks) {
      for (const choice of chunk.choices) {
        if (choice.delta?.role) opened.add(choice.index);
        if (choice.delta?.content) content.set(choice.index, (content.get(choice.index) ?? '') + choice.delta.content);
        if (choice.finish_reason) finished.set(choice.index, choice.finish_reason);
      }
    }
    expect([...opened].sort()).toEqual([0, 1, 2]);
    expect([...finished.keys()].sort()).toEqual([0, 1, 2]);
    for (const index of [0, 1, 2]) expect(content.get(index)).toMatch(/^\*\*Holiday Name:\*\* Harmony Day/);
    const usage = chunks.find((chunk) => chunk.usage)?.usage;
    expect(usage).toMatchObject({ prompt_tokens: 48, completion_tokens: 900 });
    const entry = await latestEntry();
    const [prompt, completion] = testPrices.alpha!;
    expect(entry.costNanos).toBe((48 * prompt + 900 * completion) * 1000);
  });
});

describe('Gemini model paths', () => {
  it("encodes the catalog's upstream model, so it cannot leave the model's path", async () => {
    const { status } = await ask({ model: 'svc/gemini-escape' });
    expect(status).toBe(200);
    const request = gemini.requests.at(-1)!;
    expect(decodeURIComponent(request.model)).toBe(escapingModel);
    expect(request.query).toBe('');
  });
});
