import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseChatRequest } from '../../src/ingress/surfaces/chat-completions/chat-request-schema.js';
import { chatToInternal } from '../../src/ingress/surfaces/chat-completions/chat-to-internal.js';
import { countPromptTokens, prepareTokenCounter } from '../../src/shared/token-counter.js';
import { startAnthropicProviderDouble, type AnthropicProviderDouble } from '../doubles/anthropic-provider-double.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from '../doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello, type CreatedKey } from '../support/api-client.js';
import { startDeployment, testUpstreamKey, type DeploymentKind, type TestDeployment } from '../support/gateway-harness.js';

// Budgets that clamp: a request whose worst case does not fit what is left of its key's budget is
// served with a lower output ceiling (sent upstream as max_tokens, announced in
// x-switchboard-max-tokens-clamped) rather than refused; 402 only when even the minimum output
// (SWITCHBOARD_MIN_OUTPUT_TOKENS, 32 in this suite) does not fit. The double bills every answer
// its whole ceiling (usage 'max_tokens'), the most a provider can charge, and the key's spend must
// still never pass its budget, with fallbacks, n and concurrent requests.
//
// svc/alpha: $1 / $2 per million tokens, svc/beta: $3 / $4; both may answer 64,000 tokens.

const MIN_OUTPUT = 32;
const nanosPerUsd = 1e9;

interface Context {
  double: OpenAiProviderDouble;
  anthropic: AnthropicProviderDouble;
  deployment: TestDeployment;
}

/** The prompt tokens the gateway counts for a chat body (its reservation's prompt). */
function promptTokens(body: Record<string, unknown>): number {
  return countPromptTokens(chatToInternal(parseChatRequest(body)));
}

async function spentNanos(context: Context, key: CreatedKey): Promise<number> {
  const { body } = await adminRequest(context.deployment, 'GET', `/admin/v1/keys/${key.id}`);
  return Math.round(body.spent_usd * nanosPerUsd);
}

async function ledgerCosts(context: Context, key: CreatedKey, count: number): Promise<number[]> {
  return eventually(async () => {
    const { body } = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1000`);
    expect(body.data).toHaveLength(count);
    return (body.data as Array<{ cost_usd: number }>).map((record) => Math.round(record.cost_usd * nanosPerUsd));
  }, 5000);
}

export function describeClamping(kind: DeploymentKind): void {
  const context = {} as Context;
  beforeAll(async () => {
    await prepareTokenCounter();
    context.double = await startOpenAiProviderDouble({ apiKey: testUpstreamKey });
    context.anthropic = await startAnthropicProviderDouble({ apiKey: 'test-anthropic-key' });
    context.deployment = await startDeployment(kind, {
      openAiUrl: context.double.url,
      anthropicUrl: context.anthropic.url,
      modelLimits: { alpha: { maxOutputTokens: 64_000 }, beta: { maxOutputTokens: 64_000 }, 'claude-test': { maxOutputTokens: 64_000 } },
      environment: { SWITCHBOARD_MIN_OUTPUT_TOKENS: String(MIN_OUTPUT) },
    });
  }, 90_000);
  beforeEach(() => {
    context.double?.reset();
    context.anthropic?.reset();
  });
  afterAll(async () => {
    await context.deployment?.close();
    await context.double?.close();
    await context.anthropic?.close();
  }, 30_000);

  const client = (key: CreatedKey) => new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: key.key, maxRetries: 0 });

  it('serves a $0.01 key a request without max_tokens with the ceiling the budget affords, which the provider receives', async () => {
    const key = await createKey(context.deployment, { name: 'clamped', budget_usd: 0.01 });
    context.double.script('alpha', { kind: 'text', text: 'Hello', usage: 'max_tokens' });
    const body = { model: 'svc/alpha', messages: hello };
    const { data, response } = await client(key).chat.completions.create(body as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming).withResponse();
    // $0.01 = 10,000,000 nano-USD: the prompt at $1 per million, the rest at $2 per million output tokens.
    const affordable = Math.floor((10_000 - promptTokens(body)) / 2);
    expect(response.headers.get('x-switchboard-max-tokens-clamped')).toBe(String(affordable));
    expect(context.double.requests.map((request) => request.body.max_tokens)).toEqual([affordable]);
    expect(data.usage!.completion_tokens).toBe(affordable);
    expect(await spentNanos(context, key)).toBeLessThanOrEqual(10_000_000);
  });

  it('clamps a stream too, before its headers leave', async () => {
    const key = await createKey(context.deployment, { name: 'clamped stream', budget_usd: 0.01 });
    context.double.script('alpha', { kind: 'text', chunks: ['Hel', 'lo'], usage: 'max_tokens' });
    const body = { model: 'svc/alpha', messages: [{ role: 'user' as const, content: 'Say hello' }], max_tokens: 50_000, stream: true as const, stream_options: { include_usage: true } };
    const { data: stream, response } = await client(key).chat.completions.create(body).withResponse();
    let cost: number | undefined;
    for await (const chunk of stream) if (chunk.usage) cost = (chunk.usage as unknown as { cost: number }).cost;
    const affordable = Math.floor((10_000 - promptTokens(body)) / 2);
    expect(response.headers.get('x-switchboard-max-tokens-clamped')).toBe(String(affordable));
    expect(context.double.requests[0]!.body.max_tokens).toBe(affordable);
    expect(Math.round(cost! * nanosPerUsd)).toBeLessThanOrEqual(10_000_000);
  });

  it('does not clamp a request that fits: no header, the ceiling the client asked for', async () => {
    const key = await createKey(context.deployment, { name: 'fits', budget_usd: 0.01 });
    const response = await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello, max_tokens: 100 });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(response.headers.get('x-switchboard-max-tokens-clamped')).toBeNull();
    expect(context.double.requests[0]!.body.max_tokens).toBe(100);
  });

  it('clamps with fallbacks and n at the dearest model of the chain, and bills within the budget', async () => {
    const key = await createKey(context.deployment, { name: 'chain', budget_usd: 0.01 });
    context.double.script('alpha', { kind: 'error', status: 429 });
    context.double.script('beta', { kind: 'text', text: 'Hello', usage: 'max_tokens' });
    const body = { model: 'svc/alpha', messages: hello, n: 2, fallbacks: ['svc/beta'] };
    const response = await chat(context.deployment, key.key, body);
    expect(response.status, await response.clone().text()).toBe(200);
    await response.arrayBuffer();
    // beta is the dearer: 2 prompts at $3 per million, then 2 outputs at $4 per million.
    const affordable = Math.floor((10_000 - 2 * 3 * promptTokens(body)) / (4 * 2));
    expect(response.headers.get('x-switchboard-max-tokens-clamped')).toBe(String(affordable));
    expect(context.double.requests.map((request) => [request.model, request.body.max_tokens])).toEqual([['alpha', affordable], ['beta', affordable]]);
    const [cost] = await ledgerCosts(context, key, 1);
    expect(cost).toBeLessThanOrEqual(10_000_000);
  });

  it('never spends past the budget across concurrent requests: served in full, clamped to what is left, or refused with 402', async () => {
    const key = await createKey(context.deployment, { name: 'concurrent', budget_usd: 0.01 });
    context.double.script('alpha', { kind: 'text', text: 'Hello', usage: 'max_tokens', chunkDelayMs: 50 });
    // Each asks for 1,000 tokens (about $0.002): four fit whole, the next one only clamped.
    const answers = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const response = await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello, max_tokens: 1000 });
        const text = await response.text();
        return { status: response.status, clamped: response.headers.get('x-switchboard-max-tokens-clamped'), body: JSON.parse(text) };
      }),
    );
    const served = answers.filter((answer) => answer.status === 200);
    expect(served.length).toBeGreaterThanOrEqual(4);
    const clamped = served.filter((answer) => answer.clamped !== null);
    expect(clamped.length).toBeGreaterThanOrEqual(1);
    for (const answer of clamped) expect(Number(answer.clamped)).toBeGreaterThanOrEqual(MIN_OUTPUT);
    for (const answer of clamped) expect(Number(answer.clamped)).toBeLessThan(1000);
    for (const answer of answers.filter((entry) => entry.status !== 200)) expect(answer.body.error).toMatchObject({ code: 'budget_exceeded' });
    // The provider was told each ceiling and billed all of it: still within the budget.
    expect(context.double.requests.map((request) => request.body.max_tokens).sort()).toEqual(served.map((answer) => Number(answer.clamped ?? 1000)).sort());
    const costs = await ledgerCosts(context, key, served.length);
    expect(costs.reduce((total, cost) => total + cost, 0)).toBeLessThanOrEqual(10_000_000);
    expect(await spentNanos(context, key)).toBeLessThanOrEqual(10_000_000);
  });

  it('refuses with 402 when even the minimum output does not fit, and serves the minimum when it does', async () => {
    const body = { model: 'svc/alpha', messages: hello };
    const prompt = promptTokens(body);
    const short = await createKey(context.deployment, { name: 'below minimum', budget_usd: ((prompt + 2 * (MIN_OUTPUT - 1)) * 1000) / nanosPerUsd });
    const refused = await chat(context.deployment, short.key, body);
    expect(refused.status).toBe(402);
    const error = (await refused.json()).error;
    expect(error).toMatchObject({ type: 'insufficient_quota', code: 'budget_exceeded' });
    expect(error.message).toContain(`the minimum output of ${MIN_OUTPUT} tokens`);
    expect(context.double.requests).toHaveLength(0);

    const enough = await createKey(context.deployment, { name: 'minimum', budget_usd: ((prompt + 2 * MIN_OUTPUT) * 1000) / nanosPerUsd });
    const served = await chat(context.deployment, enough.key, body);
    expect(served.status).toBe(200);
    await served.arrayBuffer();
    expect(served.headers.get('x-switchboard-max-tokens-clamped')).toBe(String(MIN_OUTPUT));
    expect(context.double.requests[0]!.body.max_tokens).toBe(MIN_OUTPUT);
  });

  it('keeps room for thinking: a clamped Messages request gets a thinking budget below its max_tokens, or 402 below 1,025 tokens', async () => {
    const messages = (key: CreatedKey, body: Record<string, unknown>) =>
      fetch(`${context.deployment.url()}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const body = { model: 'svc/claude-test', max_tokens: 32_000, thinking: { type: 'enabled', budget_tokens: 16_000 }, messages: [{ role: 'user', content: 'Think, then say hello' }] };
    // svc/claude-test: $3 / $15 per million; $0.05 affords about 3,300 output tokens.
    const key = await createKey(context.deployment, { name: 'thinking', budget_usd: 0.05 });
    const served = await messages(key, body);
    expect(served.status, await served.clone().text()).toBe(200);
    await served.arrayBuffer();
    const ceiling = Number(served.headers.get('x-switchboard-max-tokens-clamped'));
    expect(ceiling).toBeGreaterThan(1024);
    expect(ceiling).toBeLessThan(3400);
    expect(context.anthropic.requests.map((request) => [request.body.max_tokens, (request.body.thinking as { budget_tokens: number }).budget_tokens])).toEqual([[ceiling, ceiling - 1]]);
    // $0.01 affords about 660: not even the smallest thinking budget (1,024) plus one token.
    const poor = await createKey(context.deployment, { name: 'thinking, poor', budget_usd: 0.01 });
    const refused = await messages(poor, body);
    expect(refused.status).toBe(402);
    expect((await refused.json()).error.message).toContain('the minimum output of 1025 tokens');
    expect(context.anthropic.requests).toHaveLength(1);
  });
}
