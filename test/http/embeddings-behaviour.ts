import { createOpenAI } from '@ai-sdk/openai';
import { embedMany } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeEmbedding, fakeInputTokens, float32Base64 } from '../doubles/embedding-vectors.js';
import { startGeminiProviderDouble, type GeminiProviderDouble } from '../doubles/gemini-provider-double.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from '../doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello, type CreatedKey, ledgerView } from '../support/api-client.js';
import { embeddingAlias, embeddingPrices } from '../support/embeddings-catalog.js';
import { startDeployment, testUpstreamKey, type DeploymentKind, type TestDeployment } from '../support/gateway-harness.js';

// POST /v1/embeddings and GET /v1/models/{id} through the official openai client, against the
// OpenAI-format, Azure and Gemini doubles: encodings, dimensions, batches, fallbacks, billing in
// the ledger, budgets and rate limits, and models of the wrong kind.

interface EmbeddingsContext {
  openai: OpenAiProviderDouble;
  gemini: GeminiProviderDouble;
  deployment: TestDeployment;
  key: CreatedKey;
}

function useEmbeddingsGateway(kind: DeploymentKind): EmbeddingsContext {
  const context = {} as EmbeddingsContext;
  beforeAll(async () => {
    context.openai = await startOpenAiProviderDouble({ apiKey: testUpstreamKey });
    context.gemini = await startGeminiProviderDouble({ apiKey: 'test-gemini-key' });
    context.deployment = await startDeployment(kind, { openAiUrl: context.openai.url, geminiUrl: context.gemini.url });
    context.key = await createKey(context.deployment, { name: 'embeddings suite' });
  }, 60_000);
  beforeEach(() => {
    context.openai?.reset();
    context.gemini?.reset();
  });
  afterAll(async () => {
    await context.deployment?.close();
    await context.openai?.close();
    await context.gemini?.close();
  }, 30_000);
  return context;
}

/** Floats as a client reads them back into float32 (the precision embedding models have). */
const float32 = (values: number[]) => values.map((value) => Math.fround(value));

/** Nano-USD the test catalog charges for `tokens` input tokens of svc/<name>. */
const price = (name: string, tokens: number) => Math.round(tokens * embeddingPrices[name]! * 1000);

async function ledger(context: EmbeddingsContext, keyId: string, count = 1): Promise<any[]> {
  return eventually(async () => {
    const { body } = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${keyId}`);
    expect(body.data).toHaveLength(count);
    return body.data.map(ledgerView);
  }, 5000);
}

export function describeEmbeddings(kind: DeploymentKind): void {
  const context = useEmbeddingsGateway(kind);
  const client = (key = context.key.key) => new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: key, maxRetries: 0 });

  describe('POST /v1/embeddings', () => {
    it('embeds one string as floats, with the usage the provider reported', async () => {
      const response = await client().embeddings.create({ model: 'svc/embed-alpha', input: 'The quick brown fox', encoding_format: 'float' });
      expect(response.object).toBe('list');
      expect(response.model).toBe('svc/embed-alpha');
      expect(response.data).toEqual([{ object: 'embedding', index: 0, embedding: expect.any(Array) }]);
      expect(float32(response.data[0]!.embedding)).toEqual(fakeEmbedding('embed-alpha', 'The quick brown fox', 8));
      // usage.cost: what the ledger bills, 5 tokens at the model's price per million.
      expect(response.usage).toEqual({ prompt_tokens: 5, total_tokens: 5, cost: expect.any(Number) });
      expect(Math.round((response.usage as unknown as { cost: number }).cost * 1e9)).toBe(Math.round(5 * embeddingPrices['embed-alpha']! * 1000));
      expect(context.openai.requests[0]!.body).toEqual({ model: 'embed-alpha', input: ['The quick brown fox'], encoding_format: 'float' });
    });

    it('embeds a batch in input order, with the client default (base64 on the wire, decoded by the client)', async () => {
      const inputs = ['first', 'second input', 'third and last input'];
      const response = await client().embeddings.create({ model: 'svc/embed-alpha', input: inputs });
      expect(context.openai.requests[0]!.body.encoding_format).toBe('base64');
      expect(response.data.map((entry) => entry.index)).toEqual([0, 1, 2]);
      expect(response.data.map((entry) => Array.from(entry.embedding))).toEqual(inputs.map((input) => fakeEmbedding('embed-alpha', input, 8)));
      expect(response.usage.prompt_tokens).toBe(fakeInputTokens(inputs));
    });

    it('returns base64 (little-endian float32) when asked', async () => {
      const response = await client().embeddings.create({ model: 'svc/embed-alpha', input: ['a', 'b'], encoding_format: 'base64' });
      expect(response.data.map((entry) => entry.embedding)).toEqual(['a', 'b'].map((input) => float32Base64(fakeEmbedding('embed-alpha', input, 8))));
    });

    it('passes dimensions, token-array inputs and user upstream', async () => {
      const response = await client().embeddings.create({ model: 'svc/embed-alpha', input: [[1, 2, 3], [4, 5]], dimensions: 4, user: 'user-7', encoding_format: 'float' });
      expect(context.openai.requests[0]!.body).toEqual({ model: 'embed-alpha', input: [[1, 2, 3], [4, 5]], dimensions: 4, user: 'user-7', encoding_format: 'float' });
      expect(response.data.map((entry) => float32(entry.embedding))).toEqual([fakeEmbedding('embed-alpha', [1, 2, 3], 4), fakeEmbedding('embed-alpha', [4, 5], 4)]);
      expect(response.usage.prompt_tokens).toBe(5);
    });

    it('serves Gemini models through batchEmbedContents: dimensions as outputDimensionality, base64 made by the gateway, usage estimated', async () => {
      const key = await createKey(context.deployment, { name: 'gemini embeddings' });
      const inputs = ['hello gemini', 'second'];
      const response = await client(key.key).embeddings.create({ model: 'svc/embed-gemini', input: inputs, dimensions: 6, encoding_format: 'base64' });
      const [upstream] = context.gemini.requests;
      expect(upstream).toMatchObject({ model: 'embed-gemini', method: 'batchEmbedContents' });
      expect(upstream!.body).toEqual({ requests: inputs.map((text) => ({ model: 'models/embed-gemini', content: { parts: [{ text }] }, outputDimensionality: 6 })) });
      expect(response.data.map((entry) => entry.embedding)).toEqual(inputs.map((input) => float32Base64(fakeEmbedding('embed-gemini', input, 6))));
      expect(response.usage).toMatchObject({ estimated: true });
      expect(response.usage.prompt_tokens).toBeGreaterThan(0);
      const [entry] = await ledger(context, key.id);
      expect(entry).toMatchObject({ servedModel: 'svc/embed-gemini', estimated: true, promptTokens: response.usage.prompt_tokens, completionTokens: 0 });
      expect(entry.costNanos).toBe(price('embed-gemini', response.usage.prompt_tokens));
    });

    it('answers a Gemini single input as floats when floats are asked for', async () => {
      const response = await client().embeddings.create({ model: 'svc/embed-gemini', input: 'one text', encoding_format: 'float' });
      expect(response.data).toHaveLength(1);
      expect(float32(response.data[0]!.embedding)).toEqual(fakeEmbedding('embed-gemini', 'one text', 8));
    });

    it('refuses token arrays for a Gemini model with a 400 and no upstream call', async () => {
      const error = await client().embeddings.create({ model: 'svc/embed-gemini', input: [[1, 2]] }).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', param: 'input' });
      expect(context.gemini.requests).toHaveLength(0);
    });

    it('serves Azure deployments on their deployment route with the api-key header', async () => {
      const response = await client().embeddings.create({ model: 'svc/embed-azure', input: 'azure text', encoding_format: 'float' });
      expect(float32(response.data[0]!.embedding)).toEqual(fakeEmbedding('embed-azure', 'azure text', 8));
      const [upstream] = context.openai.requests;
      expect(upstream!.model).toBe('embed-azure');
      expect(upstream!.headers['api-key']).toBe(testUpstreamKey);
      expect(upstream!.headers.authorization).toBeUndefined();
    });

    it("serves the Vercel AI SDK's embedMany (floats, dimensions)", async () => {
      const provider = createOpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: context.key.key });
      const values = ['sunny day', 'rainy night'];
      const result = await embedMany({ model: provider.embedding('svc/embed-alpha'), values, dimensions: 5, maxRetries: 0 });
      expect(context.openai.requests[0]!.body).toMatchObject({ model: 'embed-alpha', input: values, encoding_format: 'float', dimensions: 5 });
      expect(result.embeddings.map(float32)).toEqual(values.map((value) => fakeEmbedding('embed-alpha', value, 5)));
      expect(result.usage.tokens).toBe(fakeInputTokens(values));
    });

    it('answers to a catalog alias', async () => {
      const response = await client().embeddings.create({ model: embeddingAlias, input: 'aliased', encoding_format: 'float' });
      expect(response.model).toBe('svc/embed-alpha');
      expect(context.openai.requests[0]!.model).toBe('embed-alpha');
    });
  });

  describe('fallbacks and billing', () => {
    it('falls back on a 429 (body fallbacks) and bills only the model that answered: input tokens x its price', async () => {
      const key = await createKey(context.deployment, { name: 'embeddings fallback', budget_usd: 1 });
      context.openai.script('embed-alpha', { kind: 'error', status: 429, retryAfter: '2' });
      context.openai.script('embed-beta', { kind: 'embedding', promptTokens: 1234 });
      const response = await client(key.key).embeddings.create({ model: 'svc/embed-alpha', input: 'fall over', fallbacks: ['svc/embed-beta'] } as OpenAI.EmbeddingCreateParams);
      expect(response.model).toBe('svc/embed-beta');
      expect(context.openai.requests.map((request) => request.model)).toEqual(['embed-alpha', 'embed-beta']);
      const [entry] = await ledger(context, key.id);
      expect(entry).toMatchObject({ requestedModel: 'svc/embed-alpha', servedModel: 'svc/embed-beta', promptTokens: 1234, completionTokens: 0, status: 200, estimated: false });
      expect(entry.costNanos).toBe(price('embed-beta', 1234));
      expect(entry.attempts.map((attempt: { model: string; outcome: string }) => [attempt.model, attempt.outcome])).toEqual([
        ['svc/embed-alpha', 'rate_limit'],
        ['svc/embed-beta', 'success'],
      ]);
      const usage = await adminRequest(context.deployment, 'GET', `/admin/v1/usage?key_id=${key.id}`);
      expect(usage.body.data).toEqual([{ requests: 1, prompt_tokens: 1234, completion_tokens: 0, cost_usd: price('embed-beta', 1234) / 1e9, cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0 }]);
      // The budget's reservation was settled to the real cost.
      const record = await adminRequest(context.deployment, 'GET', `/admin/v1/keys/${key.id}`);
      expect(Math.round(record.body.spent_usd * 1e9)).toBe(price('embed-beta', 1234));
    });

    it("falls back on a 5xx through the model's catalog fallbacks", async () => {
      context.openai.script('embed-chained', { kind: 'error', status: 500 });
      const response = await client().embeddings.create({ model: 'svc/embed-chained', input: 'chained', encoding_format: 'float' });
      expect(response.model).toBe('svc/embed-beta');
      expect(float32(response.data[0]!.embedding)).toEqual(fakeEmbedding('embed-beta', 'chained', 8));
    });

    it('falls back across wire formats (a Gemini 503 to an OpenAI-format model)', async () => {
      context.gemini.script('embed-gemini', { kind: 'error', status: 503 });
      const response = await client().embeddings.create({ model: 'svc/embed-gemini', input: 'across', fallbacks: ['svc/embed-alpha'], encoding_format: 'float' } as OpenAI.EmbeddingCreateParams);
      expect(response.model).toBe('svc/embed-alpha');
      expect(context.gemini.requests).toHaveLength(1);
    });

    it('answers 429 in the OpenAI shape when every target is rate limited', async () => {
      context.openai.script('embed-alpha', { kind: 'error', status: 429, retryAfter: '4' });
      const error = await client().embeddings.create({ model: 'svc/embed-alpha', input: 'nope' }).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect(error.headers.get('retry-after')).toBe('4');
      expect(error.error).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited' });
    });

    it('does not fall back on a 400 from the provider', async () => {
      context.openai.script('embed-alpha', { kind: 'error', status: 400, message: 'This model does not support specifying dimensions.', param: 'dimensions' });
      const error = await client().embeddings.create({ model: 'svc/embed-alpha', input: 'x', dimensions: 3, fallbacks: ['svc/embed-beta'] } as OpenAI.EmbeddingCreateParams).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.message).toContain('does not support specifying dimensions');
      expect(context.openai.requests).toHaveLength(1);
    });
  });

  describe('cancellation', () => {
    it('cancels the upstream call within a second when the client disconnects, and bills nothing', async () => {
      const key = await createKey(context.deployment, { name: 'embeddings cancel' });
      context.openai.script('embed-alpha', { kind: 'hang' });
      const controller = new AbortController();
      const pending = client(key.key).embeddings.create({ model: 'svc/embed-alpha', input: 'slow' }, { signal: controller.signal }).catch((caught) => caught);
      await eventually(() => expect(context.openai.requests).toHaveLength(1));
      const abortedAt = Date.now();
      controller.abort();
      expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
      await eventually(() => expect(context.openai.aborted.map((entry) => entry.model)).toContain('embed-alpha'), 2000);
      expect(context.openai.aborted[0]!.at - abortedAt).toBeLessThan(1000);
      const [entry] = await ledger(context, key.id);
      expect(entry).toMatchObject({ servedModel: null, status: 499, costNanos: 0 });
    });
  });

  describe('admission', () => {
    it('refuses with 402 when the input could cost more than the budget left, without calling the provider', async () => {
      const key = await createKey(context.deployment, { name: 'tiny embeddings budget', budget_usd: 0.000001 });
      const input = Array.from({ length: 400 }, (_, index) => `word${index}`).join(' ');
      const error = await client(key.key).embeddings.create({ model: 'svc/embed-beta', input }).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error.status).toBe(402);
      expect(error.error).toMatchObject({ type: 'insufficient_quota', code: 'budget_exceeded' });
      expect(error.message).toMatch(/input tokens/);
      expect(context.openai.requests).toHaveLength(0);
    });

    it('sends x-ratelimit headers and refuses past the rpm limit with 429', async () => {
      const key = await createKey(context.deployment, { name: 'embeddings rpm', rpm: 1 });
      const { response } = await client(key.key).embeddings.create({ model: 'svc/embed-alpha', input: 'one' }).withResponse();
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('1');
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      const error = await client(key.key).embeddings.create({ model: 'svc/embed-alpha', input: 'two' }).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect(error.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
      expect(context.openai.requests).toHaveLength(1);
    });
  });

  describe('models of the wrong kind and bad requests', () => {
    it('answers 400 when an embeddings request names a chat model, and the reverse', async () => {
      const embedding = await client().embeddings.create({ model: 'svc/alpha', input: 'x' }).catch((caught) => caught);
      expect(embedding).toBeInstanceOf(OpenAI.BadRequestError);
      expect(embedding.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', param: 'model' });
      expect(embedding.message).toMatch(/svc\/alpha is a chat model; use it with a chat endpoint/);
      const chatting = await chat(context.deployment, context.key.key, { model: 'svc/embed-alpha', messages: hello });
      expect(chatting.status).toBe(400);
      expect((await chatting.json()).error).toMatchObject({ code: 'invalid_value', param: 'model', message: expect.stringMatching(/svc\/embed-alpha is an embeddings model; use it with POST \/v1\/embeddings/) });
      const messages = await fetch(`${context.deployment.url()}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': context.key.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc/embed-alpha', max_tokens: 10, messages: hello }),
      });
      expect(messages.status).toBe(400);
      expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('is an embeddings model') } });
      const fallback = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/embed-beta'], messages: hello });
      expect((await fallback.json()).error).toMatchObject({ code: 'invalid_value', param: 'fallbacks[0]' });
      expect(context.openai.requests).toHaveLength(0);
    });

    it('validates the body in the OpenAI error shape', async () => {
      const cases: Array<[Record<string, unknown>, string, string]> = [
        [{ model: 'svc/embed-alpha' }, 'missing_required_parameter', 'input'],
        [{ model: 'svc/embed-alpha', input: '' }, 'invalid_value', 'input'],
        [{ model: 'svc/embed-alpha', input: 'x', encoding_format: 'int8' }, 'invalid_value', 'encoding_format'],
        [{ model: 'svc/embed-alpha', input: 'x', dimensions: 0 }, 'invalid_value', 'dimensions'],
        [{ model: 'svc/embed-alpha', input: 'x', stream: true }, 'unknown_parameter', 'stream'],
      ];
      for (const [body, code, param] of cases) {
        const response = await fetch(`${context.deployment.url()}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${context.key.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(response.status, JSON.stringify(body)).toBe(400);
        expect((await response.json()).error).toMatchObject({ type: 'invalid_request_error', code, param });
      }
      expect(context.openai.requests).toHaveLength(0);
    });
  });

  describe('GET /v1/models/{id}', () => {
    it('retrieves a model by id, in the list entry shape with its kind', async () => {
      const model = await client().models.retrieve('svc/embed-alpha');
      expect(model).toMatchObject({ id: 'svc/embed-alpha', object: 'model', kind: 'embeddings', pricing_usd_per_million: { prompt: 2, completion: 0 } });
      const listed = await fetch(`${context.deployment.url()}/v1/models`, { headers: { authorization: `Bearer ${context.key.key}` } }).then((response) => response.json());
      expect(listed.data.find((entry: { id: string }) => entry.id === 'svc/embed-alpha')).toEqual(model);
      expect(listed.data.find((entry: { id: string }) => entry.id === 'svc/alpha').kind).toBe('chat');
    });

    it('retrieves a model by catalog alias, and by an unencoded path', async () => {
      expect((await client().models.retrieve(embeddingAlias)).id).toBe('svc/embed-alpha');
      const raw = await fetch(`${context.deployment.url()}/v1/models/svc/alpha`, { headers: { authorization: `Bearer ${context.key.key}` } });
      expect(await raw.json()).toMatchObject({ id: 'svc/alpha', kind: 'chat' });
    });

    it('answers 404 in the OpenAI shape for an unknown model', async () => {
      const error = await client().models.retrieve('svc/no-such-model').catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error.error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found', param: 'model' });
      expect(error.message).toContain('svc/no-such-model');
    });
  });
}
