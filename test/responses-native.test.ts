import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { startResponsesProviderDouble, type ResponsesProviderDouble } from './doubles/responses-provider-double.js';
import { createKey, type CreatedKey } from './support/api-client.js';
import { startEmbeddedDeployment, type TestDeployment } from './support/gateway-harness.js';

// Providers that speak the Responses API besides Chat Completions (catalog `api: openai-responses`,
// as OpenAI does): a Responses client's request reaches their /responses with its own fields and
// items (hosted tools, include, encrypted reasoning); other clients keep using Chat Completions.

let openai: OpenAiProviderDouble;
let native: ResponsesProviderDouble;
let deployment: TestDeployment;
let key: CreatedKey;
const client = () => new OpenAI({ baseURL: `${deployment.url()}/v1`, apiKey: key.key, maxRetries: 0 });
const weather = { type: 'function' as const, name: 'get_weather', strict: true, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } };

beforeAll(async () => {
  [openai, native] = await Promise.all([startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' }), startResponsesProviderDouble()]);
  deployment = await startEmbeddedDeployment({ openAiUrl: openai.url, responsesUrl: native.url });
  key = await createKey(deployment, { name: 'native' });
}, 30_000);
beforeEach(() => {
  openai.reset();
  native.reset();
});
afterAll(async () => {
  await deployment?.close();
  await Promise.all([openai?.close(), native?.close()]);
});

describe('a Responses client on a Responses-speaking target', () => {
  it('sends the client\'s fields and hosted tools on, and maps usage details back', async () => {
    native.script('native-upstream', { kind: 'text', chunks: ['Searched ', 'and found.'], usage: { input: 50, output: 20, cached: 32, reasoning: 12 } });
    const response = await client().responses.create({
      model: 'svc/native',
      instructions: 'Be precise.',
      input: 'Find it',
      tools: [{ type: 'web_search' }, weather],
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low' },
      max_output_tokens: 300,
    });
    expect(response.output_text).toBe('Searched and found.');
    expect(response.usage).toMatchObject({ input_tokens: 50, output_tokens: 20, input_tokens_details: { cached_tokens: 32 }, output_tokens_details: { reasoning_tokens: 12 } });
    const upstream = native.requests.at(-1)!;
    expect(upstream.path).toBe('/v1/responses');
    expect(upstream.headers.authorization).toBe('Bearer test-responses-key');
    expect(upstream.body).toMatchObject({
      model: 'native-upstream',
      instructions: 'Be precise.',
      input: [{ type: 'message', role: 'user', content: 'Find it' }],
      tools: [{ type: 'web_search' }, weather],
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low' },
      max_output_tokens: 300,
      store: false,
      stream: true,
    });
  });

  it('keeps encrypted reasoning across turns of a previous_response_id chain', async () => {
    native.script('native-upstream', { kind: 'text', chunks: ['Forty-two.'], reasoning: { summary: 'Counting.', encrypted: 'gAAAA-encrypted-blob' } });
    const first = await client().responses.create({ model: 'svc/native', input: 'The answer?' });
    expect(first.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: 'gAAAA-encrypted-blob', summary: [{ type: 'summary_text', text: 'Counting.' }] });
    native.script('native-upstream', { kind: 'text', chunks: ['Yes.'] });
    await client().responses.create({ model: 'svc/native', previous_response_id: first.id, input: 'Sure?' });
    const input = native.requests.at(-1)!.body.input;
    expect(input[1]).toEqual({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Counting.' }], encrypted_content: 'gAAAA-encrypted-blob' });
    expect(input[2]).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Forty-two.' }] });
    expect(input.every((item: { id?: string }) => item.id === undefined)).toBe(true);
  });

  it('falls back from a rate-limited native target to a translated one', async () => {
    native.script('native-upstream', { kind: 'error', status: 429, message: 'Rate limit reached' });
    openai.script('alpha', { kind: 'text', text: 'Chat fallback answered' });
    const params = { model: 'svc/native', input: 'Hi', tools: [{ type: 'web_search' }], fallbacks: ['svc/alpha'] } as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    const response = await client().responses.create(params);
    expect(response.output_text).toBe('Chat fallback answered');
    expect(native.requests).toHaveLength(1);
    // The translated target got no hosted tool.
    expect(openai.requests[0]!.body.tools).toBeUndefined();
  });

  it('streams a function call from the target', async () => {
    native.script('native-upstream', { kind: 'function_call', name: 'get_weather', arguments: '{"city":"Bonn"}', callId: 'call_native_1' });
    const final = await client().responses.stream({ model: 'svc/native', input: 'Weather in Bonn?', tools: [weather] }).finalResponse();
    expect(final.output[0]).toMatchObject({ type: 'function_call', call_id: 'call_native_1', name: 'get_weather', arguments: '{"city":"Bonn"}' });
  });
});

describe('a Chat Completions client on a Responses-speaking target', () => {
  it('keeps using Chat Completions there, with a tool round trip', async () => {
    native.script('native-upstream', { kind: 'function_call', name: 'get_weather', arguments: '{"city":"Ulm"}', callId: 'call_chat_1' });
    const completion = await client().chat.completions.create({
      model: 'svc/native',
      messages: [{ role: 'user', content: 'Weather in Ulm?' }],
      stop: ['END'],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: weather.parameters } }],
    });
    const call = completion.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(call).toMatchObject({ id: 'call_chat_1', function: { name: 'get_weather', arguments: '{"city":"Ulm"}' } });
    expect(native.requests.at(-1)).toMatchObject({ path: '/v1/chat/completions', body: { stop: ['END'] } });
    native.script('native-upstream', { kind: 'text', chunks: ['Cold ', 'in Ulm.'] });
    const stream = await client().chat.completions.create({
      model: 'svc/native',
      stream: true,
      messages: [{ role: 'user', content: 'Weather in Ulm?' }, completion.choices[0]!.message, { role: 'tool', tool_call_id: 'call_chat_1', content: 'cold' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe('Cold in Ulm.');
    expect(native.requests.at(-1)!.path).toBe('/v1/chat/completions');
  });
});
