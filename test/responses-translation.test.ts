import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ANTHROPIC_FIXTURES_DIR, type AnthropicProviderDouble } from './doubles/anthropic-provider-double.js';
import type { GeminiProviderDouble } from './doubles/gemini-provider-double.js';
import type { OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, createKey, eventually, type CreatedKey, ledgerView } from './support/api-client.js';
import { startEmbeddedDeployment, type TestDeployment } from './support/gateway-harness.js';
import { startProviderDoubles, type ProviderDoubles } from './support/provider-doubles.js';

// The Responses API translated to Anthropic Messages and Gemini targets: the same Responses
// request, the provider's own wire format upstream, the same response object back.

let doubles: ProviderDoubles;
let openai: OpenAiProviderDouble;
let anthropic: AnthropicProviderDouble;
let gemini: GeminiProviderDouble;
let deployment: TestDeployment;
let key: CreatedKey;
const client = () => new OpenAI({ baseURL: `${deployment.url()}/v1`, apiKey: key.key, maxRetries: 0 });
const weather = { type: 'function' as const, name: 'get_weather', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

beforeAll(async () => {
  doubles = await startProviderDoubles();
  ({ openai, anthropic, gemini } = doubles);
  deployment = await startEmbeddedDeployment(doubles.urls);
  key = await createKey(deployment, { name: 'translation' });
}, 30_000);
beforeEach(() => doubles.reset());
afterAll(async () => {
  await deployment?.close();
  await doubles?.close();
});

describe('Responses to an Anthropic target', () => {
  it('answers with instructions as the system prompt, streamed and not, with the same text', async () => {
    anthropic.script('claude-test', { kind: 'text', chunks: ['Hello ', 'from ', 'Claude'], usage: { input_tokens: 12, output_tokens: 3 } });
    const whole = await client().responses.create({ model: 'svc/claude-test', instructions: 'Be kind.', input: 'Hi', max_output_tokens: 200 });
    expect(whole.output_text).toBe('Hello from Claude');
    expect(whole.usage).toMatchObject({ input_tokens: 12, output_tokens: 3 });
    const upstream = anthropic.requests.at(-1)!.body;
    expect(upstream.system).toEqual([{ type: 'text', text: 'Be kind.' }]);
    expect(upstream.max_tokens).toBe(200);
    expect(upstream.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
    anthropic.script('claude-test', { kind: 'text', chunks: ['Hello ', 'from ', 'Claude'] });
    const streamed = await client().responses.stream({ model: 'svc/claude-test', instructions: 'Be kind.', input: 'Hi' }).finalResponse();
    expect(streamed.output_text).toBe(whole.output_text);
  });

  it('round-trips a tool call as tool_use and tool_result through previous_response_id', async () => {
    anthropic.script('claude-test', { kind: 'tool_use', name: 'get_weather', input: { city: 'Turin' } });
    const first = await client().responses.create({ model: 'svc/claude-test', input: 'Weather in Turin?', tools: [weather] });
    const call = first.output.find((item) => item.type === 'function_call')!;
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Turin"}' });
    anthropic.script('claude-test', { kind: 'text', text: 'Foggy in Turin.' });
    const second = await client().responses.create({ model: 'svc/claude-test', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: 'fog' }], tools: [weather] });
    expect(second.output_text).toBe('Foggy in Turin.');
    const messages = anthropic.requests.at(-1)!.body.messages;
    expect(messages[1]).toMatchObject({ role: 'assistant', content: [{ type: 'tool_use', id: call.call_id, name: 'get_weather', input: { city: 'Turin' } }] });
    expect(messages[2]).toMatchObject({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: 'fog' }] });
  });

  it('returns thinking as a reasoning item that carries its signature back to Anthropic', async () => {
    const thinkingFixture = relative(ANTHROPIC_FIXTURES_DIR, fileURLToPath(new URL('./fixtures/anthropic-thinking-tool-use.sse', import.meta.url)));
    anthropic.script('claude-test', { kind: 'fixture', file: thinkingFixture });
    const summaries: string[] = [];
    const stream = client().responses.stream({ model: 'svc/claude-test', input: 'Weather in Graz?', tools: [weather] });
    stream.on('response.reasoning_summary_text.delta', (event) => summaries.push(event.delta));
    const first = await stream.finalResponse();
    expect(summaries.join('')).toBe('The user wants the weather. I will call get_weather.');
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    expect(first.output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: 'The user wants the weather. I will call get_weather.' }], encrypted_content: 'EqQBCkYIARgCIkBsig0123456789abcdef' });
    const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ call_id: 'toolu_01WeatherCall', arguments: '{"city":"Graz"}' });
    anthropic.script('claude-test', { kind: 'text', text: 'Mild in Graz.' });
    await client().responses.create({ model: 'svc/claude-test', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: 'mild' }], tools: [weather] });
    expect(anthropic.requests.at(-1)!.body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants the weather. I will call get_weather.', signature: 'EqQBCkYIARgCIkBsig0123456789abcdef' },
        { type: 'tool_use', id: 'toolu_01WeatherCall', name: 'get_weather', input: { city: 'Graz' } },
      ],
    });
  });
});

describe('Responses to a Gemini target', () => {
  it('answers text and a function call round trip', async () => {
    gemini.script('gemini-test', { kind: 'function_call', name: 'get_weather', args: { city: 'Kyoto' } });
    const first = await client().responses.create({ model: 'svc/gemini-test', input: 'Weather in Kyoto?', tools: [weather] });
    const call = first.output.find((item) => item.type === 'function_call')!;
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Kyoto' });
    gemini.script('gemini-test', { kind: 'text', chunks: ['Rain ', 'in Kyoto.'] });
    const second = await client().responses.stream({ model: 'svc/gemini-test', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: 'rain' }], tools: [weather] }).finalResponse();
    expect(second.output_text).toBe('Rain in Kyoto.');
    const contents = gemini.requests.at(-1)!.body.contents;
    expect(contents[1].parts[0].functionCall).toMatchObject({ name: 'get_weather', args: { city: 'Kyoto' } });
    expect(contents[2].parts[0].functionResponse).toMatchObject({ name: 'get_weather' });
  });
});

describe('billing', () => {
  it('bills a cancelled background response for what was generated, once', async () => {
    const billed = await createKey(deployment, { name: 'billing' });
    const own = new OpenAI({ baseURL: `${deployment.url()}/v1`, apiKey: billed.key, maxRetries: 0 });
    openai.script('alpha', { kind: 'text', chunks: Array.from({ length: 60 }, (_, index) => `w${index} `), chunkDelayMs: 50 });
    const queued = await own.responses.create({ model: 'svc/alpha', input: 'Long', background: true });
    await eventually(async () => expect((await own.responses.retrieve(queued.id)).output_text.length).toBeGreaterThan(10), 5000);
    await own.responses.cancel(queued.id);
    const rows = await eventually(async () => {
      const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${billed.id}`);
      expect(body.data.length).toBe(1);
      return body.data.map(ledgerView);
    });
    expect(rows[0]).toMatchObject({ status: 499 });
    expect(rows[0].completionTokens).toBeGreaterThan(0);
    expect(rows[0].completionTokens).toBeLessThan(60);
  });
});
