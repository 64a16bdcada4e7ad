import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicProviderDouble, type AnthropicProviderDouble, type AnthropicUsageCounts } from '../doubles/anthropic-provider-double.js';
import { startGeminiProviderDouble, type GeminiProviderDouble } from '../doubles/gemini-provider-double.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from '../doubles/openai-provider-double.js';
import { parseSseText } from '../doubles/sse.js';
import { adminRequest, createKey, eventually, type CreatedKey } from '../support/api-client.js';
import { startDeployment, testUpstreamKey, type DeploymentKind, type TestDeployment } from '../support/gateway-harness.js';

// Cache-aware prices, end to end: the provider doubles report cache reads, cache writes (5-minute
// and 1-hour) and reasoning tokens as each provider does; the answer's usage.cost (and the
// x-switchboard-cost-usd header of a non-streamed answer) must equal the ledger's cost to the
// nano-USD, and both must equal the cost formula worked out by hand below, per surface, streamed
// and not, with a fallback and with n.

// Catalog prices (USD per million tokens) of the models used here.
const prices = {
  alpha: { input: 1, output: 2, read: 0.25 },
  beta: { input: 3, output: 4, read: 0.75 },
  claude: { input: 3, output: 15, read: 0.3, write: 3.75, write1h: 6 },
  gemini: { input: 1, output: 4, read: 0.1 },
};

/** OpenAI-style usage: 2000 prompt tokens of which 1024 cached, 300 output of which 100 reasoning. */
const openAiUsage = { prompt_tokens: 2000, completion_tokens: 300, cached_tokens: 1024, reasoning_tokens: 100 };
/** By hand: 976 uncached x $1 + 1024 x $0.25 + 300 output (reasoning included) x $2, per million. */
const alphaCostNanos = (976 * 1 + 1024 * 0.25 + 300 * 2) * 1000;
/** The same usage served by svc/beta: 976 x $3 + 1024 x $0.75 + 300 x $4. */
const betaCostNanos = (976 * 3 + 1024 * 0.75 + 300 * 4) * 1000;

/** Anthropic-style usage: input_tokens excludes the 2000 read and the 1000 written (600 for 5 minutes, 400 for 1 hour). */
const anthropicUsage: AnthropicUsageCounts = {
  input_tokens: 100,
  output_tokens: 50,
  cache_read_input_tokens: 2000,
  cache_creation_input_tokens: 1000,
  cache_creation: { ephemeral_5m_input_tokens: 600, ephemeral_1h_input_tokens: 400 },
};
/** 100 x $3 + 2000 x $0.30 + 600 x $3.75 + 400 x $6 + 50 x $15. */
const claudeCostNanos = (100 * 3 + 2000 * 0.3 + 600 * 3.75 + 400 * 6 + 50 * 15) * 1000;

/** Gemini: promptTokenCount 1000 includes 600 cached; 100 candidates plus 50 thoughts, both output. */
const geminiUsage = { promptTokenCount: 1000, cachedContentTokenCount: 600, candidatesTokenCount: 100, thoughtsTokenCount: 50 };
/** 400 x $1 + 600 x $0.10 + 150 x $4. */
const geminiCostNanos = (400 * 1 + 600 * 0.1 + 150 * 4) * 1000;

interface Context {
  openai: OpenAiProviderDouble;
  anthropic: AnthropicProviderDouble;
  gemini: GeminiProviderDouble;
  deployment: TestDeployment;
  key: CreatedKey;
}

const nanos = (usd: number): number => Math.round(usd * 1e9);

async function ledgerRecord(context: Context, id: string): Promise<Record<string, any>> {
  return eventually(async () => {
    const { body } = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${context.key.id}&limit=1000`);
    const record = (body.data as Array<Record<string, any>>).find((entry) => entry.id === id);
    expect(record, `ledger record ${id}`).toBeDefined();
    return record!;
  }, 5000);
}

async function post(context: Context, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${context.deployment.url()}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${context.key.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const events = (text: string) => parseSseText(text).map((event) => ({ event: event.event, data: event.data === '[DONE]' ? undefined : (JSON.parse(event.data) as Record<string, any>) }));

export function describeCost(kind: DeploymentKind): void {
  const context = {} as Context;
  beforeAll(async () => {
    [context.openai, context.anthropic, context.gemini] = await Promise.all([
      startOpenAiProviderDouble({ apiKey: testUpstreamKey }),
      startAnthropicProviderDouble({ apiKey: 'test-anthropic-key' }),
      startGeminiProviderDouble({ apiKey: 'test-gemini-key' }),
    ]);
    context.deployment = await startDeployment(kind, {
      openAiUrl: context.openai.url,
      anthropicUrl: context.anthropic.url,
      geminiUrl: context.gemini.url,
      extraPrices: {
        alpha: { cache_read_usd_per_million: prices.alpha.read },
        beta: { cache_read_usd_per_million: prices.beta.read },
        'claude-test': { cache_read_usd_per_million: prices.claude.read, cache_write_usd_per_million: prices.claude.write, cache_write_1h_usd_per_million: prices.claude.write1h },
        'gemini-test': { cache_read_usd_per_million: prices.gemini.read },
      },
    });
    context.key = await createKey(context.deployment, { name: 'cost suite key' });
  }, 90_000);
  beforeEach(() => {
    context.openai?.reset();
    context.anthropic?.reset();
    context.gemini?.reset();
  });
  afterAll(async () => {
    await context.deployment?.close();
    await Promise.all([context.openai?.close(), context.anthropic?.close(), context.gemini?.close()]);
  }, 30_000);

  const client = () => new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: context.key.key, maxRetries: 0 });
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Say hello' }];

  describe('Chat Completions', () => {
    it('bills OpenAI cached input at the cache read price, with usage.cost, the cost header and the ledger split agreeing', async () => {
      context.openai.script('alpha', { kind: 'text', text: 'Hello', usage: openAiUsage });
      const { data, response } = await client().chat.completions.create({ model: 'svc/alpha', messages, max_tokens: 400 }).withResponse();
      const usage = data.usage as OpenAI.CompletionUsage & { cost: number };
      expect(usage.prompt_tokens_details?.cached_tokens).toBe(1024);
      expect(usage.completion_tokens_details?.reasoning_tokens).toBe(100);
      expect(nanos(usage.cost)).toBe(alphaCostNanos);
      expect(response.headers.get('x-switchboard-cost-usd')).toBe('0.001832');
      const record = await ledgerRecord(context, response.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(alphaCostNanos);
      expect(record).toMatchObject({ prompt_tokens: 2000, completion_tokens: 300, cache_read_tokens: 1024, cache_write_tokens: 0, reasoning_tokens: 100 });
    });

    it('puts usage.cost in the final usage chunk of a stream', async () => {
      context.openai.script('alpha', { kind: 'text', chunks: ['Hel', 'lo'], usage: openAiUsage });
      const { data: stream, response } = await client().chat.completions.create({ model: 'svc/alpha', messages, stream: true, stream_options: { include_usage: true } }).withResponse();
      let usage: (OpenAI.CompletionUsage & { cost?: number }) | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      expect(nanos(usage!.cost!)).toBe(alphaCostNanos);
      const record = await ledgerRecord(context, response.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(alphaCostNanos);
      expect(record.stream).toBe(true);
    });

    it('bills the fallback that answered at its own cache price', async () => {
      context.openai.script('alpha', { kind: 'error', status: 429 });
      context.openai.script('beta', { kind: 'text', text: 'Hello', usage: openAiUsage });
      const { data, response } = await client().chat.completions.create({ model: 'svc/alpha', messages, fallbacks: ['svc/beta'] } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming).withResponse();
      expect(data.model).toBe('svc/beta');
      expect(nanos((data.usage as unknown as { cost: number }).cost)).toBe(betaCostNanos);
      const record = await ledgerRecord(context, response.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(betaCostNanos);
    });

    it('bills Anthropic cache reads, 5-minute and 1-hour writes each at its price, n calls summed', async () => {
      context.anthropic.script('claude-test', { kind: 'text', text: 'One', usage: anthropicUsage }, { kind: 'text', text: 'Two', usage: anthropicUsage });
      const { data, response } = await client().chat.completions.create({ model: 'svc/claude-test', messages, n: 2, max_tokens: 100 }).withResponse();
      expect(data.choices).toHaveLength(2);
      const usage = data.usage as OpenAI.CompletionUsage & { cost: number; prompt_tokens_details: Record<string, unknown> };
      expect(usage.prompt_tokens).toBe(2 * 3100);
      expect(usage.prompt_tokens_details).toMatchObject({ cached_tokens: 4000, cache_creation_tokens: 2000, cache_creation: { ephemeral_5m_input_tokens: 1200, ephemeral_1h_input_tokens: 800 } });
      expect(nanos(usage.cost)).toBe(2 * claudeCostNanos);
      const record = await ledgerRecord(context, response.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(2 * claudeCostNanos);
      expect(record).toMatchObject({ cache_read_tokens: 4000, cache_write_tokens: 2000, cache_write_1h_tokens: 800 });
    });

    it('bills Gemini cached content at the cache price and thoughts as output, streamed', async () => {
      context.gemini.script('gemini-test', { kind: 'text', chunks: ['Hel', 'lo'], usage: geminiUsage });
      const { data: stream, response } = await client().chat.completions.create({ model: 'svc/gemini-test', messages, stream: true, stream_options: { include_usage: true } }).withResponse();
      let usage: (OpenAI.CompletionUsage & { cost?: number }) | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      expect(usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 150, prompt_tokens_details: { cached_tokens: 600 }, completion_tokens_details: { reasoning_tokens: 50 } });
      expect(nanos(usage!.cost!)).toBe(geminiCostNanos);
      const record = await ledgerRecord(context, response.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(geminiCostNanos);
      expect(record).toMatchObject({ cache_read_tokens: 600, reasoning_tokens: 50 });
    });

    it('bills Gemini uncached usage at the input price, not streamed', async () => {
      context.gemini.script('gemini-test', { kind: 'text', text: 'Hello', usage: { promptTokenCount: 1000, candidatesTokenCount: 100 } });
      const { data, response } = await client().chat.completions.create({ model: 'svc/gemini-test', messages }).withResponse();
      expect(nanos((data.usage as unknown as { cost: number }).cost)).toBe((1000 * 1 + 100 * 4) * 1000);
      expect(response.headers.get('x-switchboard-cost-usd')).toBe('0.0014');
    });
  });

  describe('Messages', () => {
    const anthropicHeaders = { 'anthropic-version': '2023-06-01' };
    const body = { model: 'svc/claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'Say hello' }] };

    it('carries the cache split and usage.cost in the message, with the cost header', async () => {
      context.anthropic.script('claude-test', { kind: 'text', text: 'Hello', usage: anthropicUsage });
      const answer = await post(context, '/v1/messages', body, anthropicHeaders);
      expect(answer.status, answer.text).toBe(200);
      const usage = JSON.parse(answer.text).usage;
      expect(usage).toMatchObject({ input_tokens: 100, cache_read_input_tokens: 2000, cache_creation_input_tokens: 1000, cache_creation: { ephemeral_5m_input_tokens: 600, ephemeral_1h_input_tokens: 400 }, output_tokens: 50 });
      expect(nanos(usage.cost)).toBe(claudeCostNanos);
      expect(nanos(Number(answer.headers.get('x-switchboard-cost-usd')))).toBe(claudeCostNanos);
      const record = await ledgerRecord(context, answer.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(claudeCostNanos);
    });

    it('puts usage.cost in message_delta of a stream', async () => {
      context.anthropic.script('claude-test', { kind: 'text', chunks: ['Hel', 'lo'], usage: anthropicUsage });
      const answer = await post(context, '/v1/messages', { ...body, stream: true }, anthropicHeaders);
      const delta = events(answer.text).find((event) => event.event === 'message_delta')!;
      expect(nanos(delta.data!.usage.cost)).toBe(claudeCostNanos);
      const record = await ledgerRecord(context, answer.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(claudeCostNanos);
    });
  });

  describe('GET /v1/models', () => {
    it('lists the cache and reasoning prices a model bills, fallbacks applied', async () => {
      const models = (await client().models.list()).data as unknown as Array<Record<string, any>>;
      const claude = models.find((model) => model.id === 'svc/claude-test')!;
      expect(claude.pricing_usd_per_million).toEqual({ prompt: 3, completion: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6, reasoning: 15 });
      expect(claude.pricing).toMatchObject({ prompt: '0.000003', input_cache_read: '0.0000003', input_cache_write: '0.00000375', internal_reasoning: '0.000015' });
      // svc/alpha sets a read price only: writes at the input price, 1-hour writes at the write price.
      expect(models.find((model) => model.id === 'svc/alpha')!.pricing_usd_per_million).toEqual({ prompt: 1, completion: 2, cache_read: 0.25, cache_write: 1, cache_write_1h: 1, reasoning: 2 });
    });
  });

  describe('usage API', () => {
    it('sums the cache and reasoning split per model, with the exact cost', async () => {
      const key = await createKey(context.deployment, { name: 'usage split' });
      const own = new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: key.key, maxRetries: 0 });
      context.openai.script('alpha', { kind: 'text', text: 'Hello', usage: openAiUsage });
      context.anthropic.script('claude-test', { kind: 'text', text: 'Hello', usage: anthropicUsage });
      await own.chat.completions.create({ model: 'svc/alpha', messages });
      await own.chat.completions.create({ model: 'svc/alpha', messages });
      await own.chat.completions.create({ model: 'svc/claude-test', messages });
      const rows = await eventually(async () => {
        const { status, body } = await adminRequest(context.deployment, 'GET', `/admin/v1/usage?key_id=${key.id}&group_by=model`);
        expect(status).toBe(200);
        expect(body.data.map((row: { requests: number }) => row.requests)).toEqual([2, 1]);
        return body.data as Array<Record<string, number | string>>;
      }, 5000);
      expect(rows[0]).toMatchObject({ model: 'svc/alpha', prompt_tokens: 4000, completion_tokens: 600, cache_read_tokens: 2048, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 200 });
      expect(nanos(rows[0]!.cost_usd as number)).toBe(2 * alphaCostNanos);
      expect(rows[1]).toMatchObject({ model: 'svc/claude-test', prompt_tokens: 3100, completion_tokens: 50, cache_read_tokens: 2000, cache_write_tokens: 1000, cache_write_1h_tokens: 400, reasoning_tokens: 0 });
      expect(nanos(rows[1]!.cost_usd as number)).toBe(claudeCostNanos);
    });
  });

  describe('Responses and Embeddings', () => {
    it('puts usage.cost in response.usage, streamed (response.completed) and not', async () => {
      context.openai.script('alpha', { kind: 'text', text: 'Hello', usage: openAiUsage }, { kind: 'text', chunks: ['Hel', 'lo'], usage: openAiUsage });
      const whole = await post(context, '/v1/responses', { model: 'svc/alpha', input: 'Say hello', store: false });
      expect(whole.status, whole.text).toBe(200);
      const usage = JSON.parse(whole.text).usage;
      expect(usage).toMatchObject({ input_tokens: 2000, input_tokens_details: { cached_tokens: 1024 }, output_tokens_details: { reasoning_tokens: 100 } });
      expect(nanos(usage.cost)).toBe(alphaCostNanos);
      expect(whole.headers.get('x-switchboard-cost-usd')).toBe('0.001832');
      const streamed = await post(context, '/v1/responses', { model: 'svc/alpha', input: 'Say hello', store: false, stream: true });
      const completed = events(streamed.text).find((event) => event.event === 'response.completed')!;
      expect(nanos(completed.data!.response.usage.cost)).toBe(alphaCostNanos);
      const record = await ledgerRecord(context, streamed.headers.get('x-request-id')!);
      expect(nanos(record.cost_usd)).toBe(alphaCostNanos);
    });

    it('puts usage.cost in an embeddings answer, equal to the ledger', async () => {
      const answer = await post(context, '/v1/embeddings', { model: 'svc/embed-alpha', input: ['one', 'two'] });
      expect(answer.status, answer.text).toBe(200);
      const usage = JSON.parse(answer.text).usage;
      const record = await ledgerRecord(context, answer.headers.get('x-request-id')!);
      expect(usage.cost).toBeGreaterThan(0);
      expect(nanos(usage.cost)).toBe(nanos(record.cost_usd));
      expect(nanos(Number(answer.headers.get('x-switchboard-cost-usd')))).toBe(nanos(record.cost_usd));
    });
  });
}
