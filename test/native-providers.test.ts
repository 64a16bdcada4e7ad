import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AnthropicProviderDouble } from './doubles/anthropic-provider-double.js';
import type { GeminiProviderDouble } from './doubles/gemini-provider-double.js';
import type { OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, createKey, eventually, type CreatedKey } from './support/api-client.js';
import { startEmbeddedDeployment, type TestDeployment } from './support/gateway-harness.js';
import { startProviderDoubles, type ProviderDoubles } from './support/provider-doubles.js';

// The full gateway against wire-faithful doubles of the Anthropic Messages API and the Gemini API,
// seen through the official openai client: the same scripted answer must look the same whichever
// provider format produced it. Provider-specific failures (Anthropic's 529 and its error event after
// HTTP 200, Gemini's RESOURCE_EXHAUSTED with RetryInfo) must drive the fallback chain as documented.

type Scenario =
  | { kind: 'text'; chunks: string[]; prompt: number; completion: number; chunkDelayMs?: number }
  | { kind: 'tool'; name: string; args: Record<string, unknown> }
  | { kind: 'error'; status: number; retryAfterSeconds?: number };

const providers = ['openai', 'anthropic', 'gemini'] as const;
type Provider = (typeof providers)[number];
const modelOf: Record<Provider, string> = { openai: 'svc/alpha', anthropic: 'svc/claude-test', gemini: 'svc/gemini-test' };

let doubles: ProviderDoubles;
let openai: OpenAiProviderDouble;
let anthropic: AnthropicProviderDouble;
let gemini: GeminiProviderDouble;
let deployment: TestDeployment;
let key: CreatedKey;

function script(provider: Provider, ...scenarios: Scenario[]): void {
  for (const s of scenarios) {
    if (provider === 'openai') {
      if (s.kind === 'text') openai.script('alpha', { kind: 'text', chunks: s.chunks, chunkDelayMs: s.chunkDelayMs, usage: { prompt_tokens: s.prompt, completion_tokens: s.completion } });
      else if (s.kind === 'tool') openai.script('alpha', { kind: 'tool_call', name: s.name, arguments: JSON.stringify(s.args) });
      else openai.script('alpha', { kind: 'error', status: s.status, retryAfter: s.retryAfterSeconds?.toString() });
    } else if (provider === 'anthropic') {
      if (s.kind === 'text') anthropic.script('claude-test', { kind: 'text', chunks: s.chunks, chunkDelayMs: s.chunkDelayMs, usage: { input_tokens: s.prompt, output_tokens: s.completion } });
      else if (s.kind === 'tool') anthropic.script('claude-test', { kind: 'tool_use', name: s.name, input: s.args });
      else anthropic.script('claude-test', { kind: 'error', status: s.status, retryAfter: s.retryAfterSeconds?.toString() });
    } else {
      if (s.kind === 'text') gemini.script('gemini-test', { kind: 'text', chunks: s.chunks, chunkDelayMs: s.chunkDelayMs, usage: { promptTokenCount: s.prompt, candidatesTokenCount: s.completion } });
      else if (s.kind === 'tool') gemini.script('gemini-test', { kind: 'function_call', name: s.name, args: s.args });
      else gemini.script('gemini-test', { kind: 'error', status: s.status, retryDelay: s.retryAfterSeconds === undefined ? undefined : `${s.retryAfterSeconds}s` });
    }
  }
}

/** Adds the gateway's `fallbacks` extension, which the client sends along untouched. */
function withFallback<T extends OpenAI.Chat.ChatCompletionCreateParams>(params: T): T {
  return { ...params, fallbacks: ['svc/alpha'] };
}

const client = () => new OpenAI({ baseURL: `${deployment.url()}/v1`, apiKey: key.key, maxRetries: 0 });
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'Answer briefly.' },
  { role: 'user', content: 'Say hello' },
];
const weatherTool: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

function usageOf(usage: OpenAI.CompletionUsage | null | undefined) {
  return usage ? { prompt: usage.prompt_tokens, completion: usage.completion_tokens, total: usage.total_tokens } : undefined;
}

async function collect(stream: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>) {
  const texts: string[] = [];
  const finishes: Array<string | null> = [];
  const order: number[] = [];
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      if (choice.delta.content) {
        texts[choice.index] = (texts[choice.index] ?? '') + choice.delta.content;
        order.push(choice.index);
      }
      if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { texts, finishes, usage: usageOf(usage), order };
}

async function failure(promise: Promise<unknown>) {
  const error = await promise.then(() => undefined, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  const api = error as InstanceType<typeof OpenAI.APIError>;
  return { status: api.status, code: api.code, type: api.type, retryAfter: api.headers?.get('retry-after') ?? null };
}

async function ledger(keyId: string): Promise<any[]> {
  return eventually(async () => {
    const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${keyId}`);
    expect(body.data.length).toBeGreaterThan(0);
    return body.data;
  });
}

/** Runs the same scenario on every provider and returns what the client saw for each. */
async function acrossProviders<T>(run: (provider: Provider) => Promise<T>): Promise<Record<Provider, T>> {
  const results = {} as Record<Provider, T>;
  for (const provider of providers) results[provider] = await run(provider);
  return results;
}

beforeAll(async () => {
  doubles = await startProviderDoubles();
  ({ openai, anthropic, gemini } = doubles);
  deployment = await startEmbeddedDeployment(doubles.urls);
  key = await createKey(deployment, { name: 'native providers' });
}, 60_000);

beforeEach(() => doubles.reset());

afterAll(async () => {
  await deployment?.close();
  await doubles?.close();
}, 30_000);

describe('the openai client sees the same results through every provider format', () => {
  const hello: Scenario = { kind: 'text', chunks: ['Hello', ' there', '!'], prompt: 11, completion: 6 };

  it('answers text with the same content, finish reason and usage', async () => {
    const results = await acrossProviders(async (provider) => {
      script(provider, hello);
      const completion = await client().chat.completions.create({ model: modelOf[provider], messages });
      return { content: completion.choices[0]!.message.content, finish: completion.choices[0]!.finish_reason, usage: usageOf(completion.usage) };
    });
    expect(results.openai).toEqual({ content: 'Hello there!', finish: 'stop', usage: { prompt: 11, completion: 6, total: 17 } });
    expect(results.anthropic).toEqual(results.openai);
    expect(results.gemini).toEqual(results.openai);
    // Each native request is in the provider's own shape: system hoisted, key in the provider's header.
    expect(anthropic.requests[0]!.body).toMatchObject({ model: 'claude-test', max_tokens: 1000, system: [{ type: 'text', text: 'Answer briefly.' }], messages: [{ role: 'user' }] });
    expect(anthropic.requests[0]!.headers).toMatchObject({ 'x-api-key': 'test-anthropic-key', 'anthropic-version': '2023-06-01' });
    expect(gemini.requests[0]).toMatchObject({ method: 'generateContent', headers: { 'x-goog-api-key': 'test-gemini-key' }, body: { systemInstruction: { parts: [{ text: 'Answer briefly.' }] } } });
  });

  it('streams the same text, finish reason and usage', async () => {
    const results = await acrossProviders(async (provider) => {
      script(provider, hello);
      return collect(await client().chat.completions.create({ model: modelOf[provider], messages, stream: true, stream_options: { include_usage: true } }));
    });
    expect(results.openai).toMatchObject({ texts: ['Hello there!'], finishes: ['stop'], usage: { prompt: 11, completion: 6, total: 17 } });
    expect(results.anthropic).toEqual(results.openai);
    expect(results.gemini).toEqual(results.openai);
    expect(gemini.requests[0]).toMatchObject({ method: 'streamGenerateContent', query: '?alt=sse' });
  });

  it('returns tool calls the client can answer, and accepts the answer back', async () => {
    const results = await acrossProviders(async (provider) => {
      script(provider, { kind: 'tool', name: 'get_weather', args: { city: 'Paris' } });
      const first = await client().chat.completions.create({ model: modelOf[provider], messages, tools: [weatherTool] });
      const message = first.choices[0]!.message;
      const call = message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      script(provider, { ...hello, chunks: ['It is sunny.'] });
      const second = await client().chat.completions.create({
        model: modelOf[provider],
        tools: [weatherTool],
        messages: [...messages, message, { role: 'tool', tool_call_id: call.id, content: '{"sky":"clear"}' }],
      });
      return { finish: first.choices[0]!.finish_reason, name: call.function.name, args: JSON.parse(call.function.arguments), idIsString: typeof call.id === 'string', reply: second.choices[0]!.message.content };
    });
    expect(results.openai).toEqual({ finish: 'tool_calls', name: 'get_weather', args: { city: 'Paris' }, idIsString: true, reply: 'It is sunny.' });
    expect(results.anthropic).toEqual(results.openai);
    expect(results.gemini).toEqual(results.openai);
    // The doubles refuse a tool result that does not answer an earlier call, so these requests were well formed.
    expect(anthropic.requests[1]!.body.messages.at(-1).content[0]).toMatchObject({ type: 'tool_result', content: '{"sky":"clear"}' });
    expect(gemini.requests[1]!.body.contents.at(-1).parts[0]).toEqual({ functionResponse: { name: 'get_weather', response: { sky: 'clear' } } });
  });

  it('streams tool calls the client reassembles', async () => {
    const results = await acrossProviders(async (provider) => {
      script(provider, { kind: 'tool', name: 'get_weather', args: { city: 'Lyon' } });
      const final = await client().chat.completions.stream({ model: modelOf[provider], messages, tools: [weatherTool] }).finalChatCompletion();
      const call = final.choices[0]!.message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      return { finish: final.choices[0]!.finish_reason, name: call.function.name, args: JSON.parse(call.function.arguments) };
    });
    expect(results.openai).toEqual({ finish: 'tool_calls', name: 'get_weather', args: { city: 'Lyon' } });
    expect(results.anthropic).toEqual(results.openai);
    expect(results.gemini).toEqual(results.openai);
  });

  it('returns n choices; Anthropic, which has no n, is called n times and each call is billed', async () => {
    const results = await acrossProviders(async (provider) => {
      // OpenAI and Gemini count the completion tokens of all choices in one call; Anthropic reports per call.
      script(provider, provider === 'anthropic' ? hello : { ...hello, completion: 12 });
      const completion = await client().chat.completions.create({ model: modelOf[provider], messages, n: 2 });
      return { choices: completion.choices.map((choice) => [choice.index, choice.message.content, choice.finish_reason]), usage: usageOf(completion.usage) };
    });
    const choices = [[0, 'Hello there!', 'stop'], [1, 'Hello there!', 'stop']];
    expect(results.openai).toEqual({ choices, usage: { prompt: 11, completion: 12, total: 23 } });
    expect(results.gemini).toEqual(results.openai);
    expect(results.anthropic).toEqual({ choices, usage: { prompt: 22, completion: 12, total: 34 } });
    expect(anthropic.requests).toHaveLength(2);
    expect(anthropic.requests.every((request) => request.body.n === undefined)).toBe(true);
    expect(gemini.requests[0]!.body.generationConfig.candidateCount).toBe(2);
  });

  it('streams n choices; the Anthropic calls interleave, each call\'s choice renumbered', async () => {
    const results = await acrossProviders(async (provider) => {
      const slow = { ...hello, chunks: ['one', ' two', ' three', ' four'], chunkDelayMs: 15 };
      script(provider, provider === 'anthropic' ? slow : { ...slow, completion: 12 });
      return collect(await client().chat.completions.create({ model: modelOf[provider], messages, n: 2, stream: true, stream_options: { include_usage: true } }));
    });
    for (const provider of providers) {
      expect(results[provider].texts).toEqual(['one two three four', 'one two three four']);
      expect(results[provider].finishes).toEqual(['stop', 'stop']);
    }
    expect(results.gemini.usage).toEqual(results.openai.usage);
    expect(results.anthropic.usage).toEqual({ prompt: 22, completion: 12, total: 34 });
    // Both calls streamed at once: choice 1 spoke before choice 0 had finished.
    const order = results.anthropic.order;
    expect(order.indexOf(1)).toBeLessThan(order.lastIndexOf(0));
  });

  it.each([
    ['a rate limit', { kind: 'error', status: 429, retryAfterSeconds: 7 }, { status: 429, code: 'upstream_rate_limited', type: 'rate_limit_error', retryAfter: '7' }],
    ['a refused request', { kind: 'error', status: 400 }, { status: 400, code: 'upstream_bad_request', type: 'invalid_request_error', retryAfter: null }],
    ['a server error', { kind: 'error', status: 500 }, { status: 502, code: 'upstream_error', type: 'server_error', retryAfter: null }],
  ] as const)('reports %s the same way', async (_name, scenario, expected) => {
    const results = await acrossProviders(async (provider) => {
      script(provider, scenario);
      return failure(client().chat.completions.create({ model: modelOf[provider], messages }));
    });
    expect(results.openai).toEqual(expected);
    expect(results.anthropic).toEqual(expected);
    expect(results.gemini).toEqual(expected);
  });
});

describe('Anthropic failures and the fallback chain', () => {
  it('falls back on a 529 overloaded_error and bills only the model that answered', async () => {
    const own = await createKey(deployment, { name: 'anthropic 529' });
    anthropic.script('claude-test', { kind: 'error', status: 529 });
    openai.script('alpha', { kind: 'text', text: 'from alpha', usage: { prompt_tokens: 10, completion_tokens: 3 } });
    const completion = await new OpenAI({ baseURL: `${deployment.url()}/v1`, apiKey: own.key, maxRetries: 0 }).chat.completions.create(withFallback({ model: 'svc/claude-test', messages }));
    expect(completion.model).toBe('svc/alpha');
    const [entry] = await ledger(own.id);
    expect(entry.attempts.map((attempt: any) => [attempt.deployment, attempt.outcome, attempt.status ?? null])).toEqual([
      ['anthropic-double/claude-test', 'overloaded', 529],
      ['double/alpha', 'success', null],
    ]);
    expect(entry).toMatchObject({ served_model: 'svc/alpha', prompt_tokens: 10, completion_tokens: 3 });
  });

  it('treats `event: error` overloaded after HTTP 200, before any content, as a failure before the first token', async () => {
    anthropic.script('claude-test', { kind: 'overloaded_event' });
    openai.script('alpha', { kind: 'text', chunks: ['rescued'] });
    const seen = await collect(await client().chat.completions.create(withFallback({ model: 'svc/claude-test', messages, stream: true })));
    expect(seen.texts).toEqual(['rescued']);
    expect(anthropic.requests).toHaveLength(1);
  });

  it('ends the stream with the error chunk when the error event follows content; nothing falls back', async () => {
    anthropic.script('claude-test', { kind: 'midstream_error', chunksBeforeError: 2 });
    const stream = await client().chat.completions.create(withFallback({ model: 'svc/claude-test', messages, stream: true }));
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(text).toBe('Partial piece1');
    expect(openai.requests).toHaveLength(0);
  });

  it('moves the whole fan-out to the next target when one call fails before any call streamed', async () => {
    anthropic.script('claude-test', { kind: 'text', chunks: ['never', ' shown'], chunkDelayMs: 300 }, { kind: 'error', status: 529 });
    openai.script('alpha', { kind: 'text', chunks: ['fallback'] });
    const seen = await collect(await client().chat.completions.create(withFallback({ model: 'svc/claude-test', messages, n: 2, stream: true })));
    expect(seen.texts).toEqual(['fallback', 'fallback']);
    expect(openai.requests[0]!.body.n).toBe(2);
    // The slow call was stopped rather than left running.
    await eventually(() => expect(anthropic.aborted).toEqual(['claude-test']));
  });

  it('ends the fan-out stream with the error chunk when one call fails after another streamed', async () => {
    anthropic.script('claude-test', { kind: 'text', chunks: ['first'] }, { kind: 'error', status: 500, delayMs: 150 });
    const stream = await client().chat.completions.create(withFallback({ model: 'svc/claude-test', messages, n: 2, stream: true }));
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) for (const choice of chunk.choices) text += choice.delta.content ?? '';
    })().then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(text).toBe('first');
    expect(openai.requests).toHaveLength(0);
  });

  it('replays the recorded stream and message fixtures faithfully', async () => {
    anthropic.script('claude-test', { kind: 'fixture', file: 'stream-basic.sse' });
    const streamed = await collect(await client().chat.completions.create({ model: 'svc/claude-test', messages, stream: true, stream_options: { include_usage: true } }));
    expect(streamed).toMatchObject({ texts: ['Hello there!'], finishes: ['stop'], usage: { prompt: 11, completion: 6, total: 17 } });
    anthropic.script('claude-test', { kind: 'fixture', file: 'message-tool-use.response.json' });
    const completion = await client().chat.completions.create({ model: 'svc/claude-test', messages });
    const call = completion.choices[0]!.message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(call).toMatchObject({ id: 'toolu_01Q9ExVZnzZj7E2QQYHYtNUa', function: { name: 'json' } });
    expect(JSON.parse(call.function.arguments).elements).toHaveLength(4);
    expect(usageOf(completion.usage)).toEqual({ prompt: 1151, completion: 87, total: 1238 });
  });
});

describe('Gemini failures and the fallback chain', () => {
  it('answers 429 with the RetryInfo delay as retry-after, or falls back when it can', async () => {
    gemini.script('gemini-test', { kind: 'error', status: 429 });
    expect(await failure(client().chat.completions.create({ model: 'svc/gemini-test', messages }))).toEqual({ status: 429, code: 'upstream_rate_limited', type: 'rate_limit_error', retryAfter: '35' });
    const own = await createKey(deployment, { name: 'gemini 429' });
    openai.script('alpha', { kind: 'text', text: 'from alpha' });
    const completion = await new OpenAI({ baseURL: `${deployment.url()}/v1`, apiKey: own.key, maxRetries: 0 }).chat.completions.create(withFallback({ model: 'svc/gemini-test', messages }));
    expect(completion.choices[0]!.message.content).toBe('from alpha');
    const [entry] = await ledger(own.id);
    expect(entry.attempts[0]).toMatchObject({ deployment: 'gemini-double/gemini-test', outcome: 'rate_limit', status: 429, message: 'You exceeded your current quota, please check your plan.' });
  });

  it('falls back when the stream URL answers 404 before any event', async () => {
    gemini.script('gemini-test', { kind: 'fixture', file: 'recording-stream-error-404.json' });
    openai.script('alpha', { kind: 'text', chunks: ['found'] });
    const seen = await collect(await client().chat.completions.create(withFallback({ model: 'svc/gemini-test', messages, stream: true })));
    expect(seen.texts).toEqual(['found']);
  });

  it('replays recorded streams: MAX_TOKENS becomes length, a function call becomes tool_calls', async () => {
    gemini.script('gemini-test', { kind: 'fixture', file: 'recording-stream-max-tokens.json' });
    const cut = await collect(await client().chat.completions.create({ model: 'svc/gemini-test', messages, stream: true, stream_options: { include_usage: true } }));
    expect(cut).toMatchObject({ texts: ["The sky is blue because of a phenomenon called **Rayleigh scattering**. Here's a breakdown:"], finishes: ['length'], usage: { prompt: 6, completion: 20, total: 26 } });
    gemini.script('gemini-test', { kind: 'fixture', file: 'recording-stream-function-calling.json' });
    const final = await client().chat.completions.stream({ model: 'svc/gemini-test', messages, tools: [weatherTool] }).finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.function).toEqual({ name: 'customDivide', arguments: '{"denominator":2,"numerator":100}' });
  });

  it('refuses a tool result for an unknown call id with 400 invalid_value, without calling anyone', async () => {
    const bad = [...messages, { role: 'tool' as const, tool_call_id: 'call_nowhere', content: '42' }];
    const seen = await failure(client().chat.completions.create(withFallback({ model: 'svc/gemini-test', messages: bad })));
    expect(seen).toEqual({ status: 400, code: 'invalid_value', type: 'invalid_request_error', retryAfter: null });
    expect(gemini.requests).toHaveLength(0);
    expect(openai.requests).toHaveLength(0);
  });
});
