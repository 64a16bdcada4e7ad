import Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicProviderDouble, type AnthropicProviderDouble } from './anthropic-provider-double.js';

// The double on its own, seen through the official Anthropic client: if the client cannot read what
// it streams, a gateway test built on it would prove nothing. Also: it takes the traffic Claude Code
// really sends (recorded in test/fixtures/claude-code), and refuses what the API refuses.

let double: AnthropicProviderDouble;
const client = (apiKey = 'double-key') => new Anthropic({ baseURL: double.url.replace(/\/v1$/, ''), apiKey, maxRetries: 0 });
const hello: Anthropic.MessageParam[] = [{ role: 'user', content: 'Say hello' }];
type ApiError = InstanceType<typeof Anthropic.APIError>;

interface Recorded {
  exchanges: Array<{ method: string; url: string; headers: Record<string, string>; body: Record<string, unknown> }>;
}
const toolRoundTrip = JSON.parse(readFileSync(new URL('../fixtures/claude-code/tool-round-trip.json', import.meta.url), 'utf8')) as Recorded;

beforeAll(async () => {
  double = await startAnthropicProviderDouble({ apiKey: 'double-key', countTokens: 321 });
});
beforeEach(() => double.reset());
afterAll(() => double.close());

describe('the Anthropic provider double', () => {
  it('streams thinking with its signature, redacted thinking, text and a tool call the client reassembles', async () => {
    double.script('m', {
      kind: 'blocks',
      blocks: [
        { type: 'thinking', thinking: 'Let me think about it.', signature: 'sig-abc' },
        { type: 'redacted_thinking', data: 'opaque-data' },
        { type: 'text', text: 'Checking the weather.' },
        { type: 'tool_use', id: 'toolu_01Fixed', name: 'get_weather', input: { city: 'Paris', days: [1, 2] } },
      ],
      usage: { input_tokens: 50, output_tokens: 30, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000 },
    });
    const stream = client().messages.stream({ model: 'm', max_tokens: 100, messages: hello });
    const events: string[] = [];
    stream.on('streamEvent', (event) => events.push(event.type === 'content_block_delta' ? `delta:${event.delta.type}` : event.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([
      { type: 'thinking', thinking: 'Let me think about it.', signature: 'sig-abc' },
      { type: 'redacted_thinking', data: 'opaque-data' },
      { type: 'text', text: 'Checking the weather.' },
      { type: 'tool_use', id: 'toolu_01Fixed', name: 'get_weather', input: { city: 'Paris', days: [1, 2] } },
    ].map((block) => expect.objectContaining(block)));
    expect(final.stop_reason).toBe('tool_use');
    expect(final.usage).toMatchObject({ input_tokens: 50, output_tokens: 30, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000 });
    expect(events.slice(0, 5)).toEqual(['message_start', 'content_block_start', 'delta:thinking_delta', 'delta:thinking_delta', 'delta:thinking_delta']);
    expect(events).toContain('delta:signature_delta');
    expect(events).toContain('delta:input_json_delta');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
  });

  it('answers the same blocks without streaming', async () => {
    double.script('m', { kind: 'blocks', blocks: [{ type: 'thinking', thinking: 'Hmm.', signature: 'sig' }, { type: 'text', text: 'Done.' }] });
    const message = await client().messages.create({ model: 'm', max_tokens: 100, messages: hello });
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(message.stop_reason).toBe('end_turn');
  });

  it('fails a stream mid-way with an error event the client throws', async () => {
    double.script('m', { kind: 'blocks', blocks: [{ type: 'text', text: 'first block' }, { type: 'text', text: 'never' }], errorAfterBlocks: 1 });
    const stream = await client().messages.create({ model: 'm', max_tokens: 100, messages: hello, stream: true });
    let text = '';
    const error = await (async () => {
      for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    })().then(() => undefined, (caught: unknown) => caught);
    expect(text).toBe('first block');
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as ApiError).type).toBe('api_error');
  });

  it.each([
    [429, Anthropic.RateLimitError, 'rate_limit_error'],
    [529, Anthropic.InternalServerError, 'overloaded_error'],
    [400, Anthropic.BadRequestError, 'invalid_request_error'],
  ] as const)('answers %i before any stream, typed for the client', async (status, errorClass, type) => {
    double.script('m', { kind: 'error', status, retryAfter: status === 429 ? '9' : undefined });
    const error = await client().messages.create({ model: 'm', max_tokens: 100, messages: hello, stream: true }).then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(errorClass);
    expect((error as ApiError).type).toBe(type);
    if (status === 429) expect((error as ApiError).headers?.get('retry-after')).toBe('9');
  });

  it('counts tokens, also with the query string Claude Code adds', async () => {
    const counted = await client().messages.countTokens({ model: 'm', messages: hello });
    expect(counted.input_tokens).toBe(321);
    const beta = await fetch(`${double.url}/messages/count_tokens?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'double-key', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'm', messages: hello }),
    });
    expect(await beta.json()).toEqual({ input_tokens: 321 });
    expect(double.requests.map((request) => request.url)).toEqual(['/v1/messages/count_tokens', '/v1/messages/count_tokens?beta=true']);
  });

  it("accepts Claude Code's recorded requests, role system entries and returned thinking included", async () => {
    for (const exchange of toolRoundTrip.exchanges.filter((candidate) => candidate.method === 'POST')) {
      const response = await fetch(`${double.url.replace(/\/v1$/, '')}${exchange.url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'double-key', 'anthropic-version': exchange.headers['anthropic-version']!, 'anthropic-beta': exchange.headers['anthropic-beta']! },
        body: JSON.stringify(exchange.body),
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(double.requests[1]!.body).toEqual(toolRoundTrip.exchanges[2]!.body);
  });

  it('refuses a system role without the beta, thinking without its signature, and a bad key', async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${double.url}/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'double-key', 'anthropic-version': '2023-06-01', ...headers }, body: JSON.stringify(body) });
    const systemRole = await post({ model: 'm', max_tokens: 10, messages: [...hello, { role: 'system', content: 'x' }] });
    expect(systemRole.status).toBe(400);
    const unsigned = await post({ model: 'm', max_tokens: 10, messages: [...hello, { role: 'assistant', content: [{ type: 'thinking', thinking: 'x' }] }, ...hello] });
    expect(unsigned.status).toBe(400);
    expect((await unsigned.json()).error.message).toContain('signature');
    const error = await client('wrong').messages.create({ model: 'm', max_tokens: 10, messages: hello }).then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
  });
});
