import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { useGateway } from './http/gateway-context.js';

// Third-party clients of the Responses API, unchanged but for the base URL and key: the Vercel AI
// SDK's default OpenAI provider (openai(id) speaks Responses) and LangChain's ChatOpenAI with
// useResponsesApi. Both run against a Chat Completions provider double through the gateway.

const context = useGateway('embedded');
const openai = () => createOpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: context.key.key });
const weatherTool = tool({
  description: 'Weather of a city',
  inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }),
  execute: async ({ city }) => ({ city, celsius: 18 }),
});

describe('the Vercel AI SDK default OpenAI provider', () => {
  it('generates text with a tool call and a second step', async () => {
    context.double.script('alpha', { kind: 'tool_call', name: 'weather', arguments: '{"city":"Lyon"}' }, { kind: 'text', text: 'Lyon is at 18 degrees.' });
    const result = await generateText({ model: openai()('svc/alpha'), prompt: 'Weather in Lyon?', tools: { weather: weatherTool }, stopWhen: stepCountIs(3) });
    expect(result.text).toBe('Lyon is at 18 degrees.');
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.toolCalls[0]).toMatchObject({ toolName: 'weather', input: { city: 'Lyon' } });
    expect(result.totalUsage.outputTokens).toBeGreaterThan(0);
    // The second request carried the tool call and its result to the provider.
    const messages = context.double.requests[1]!.body.messages;
    expect(messages.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ function: { name: 'weather', arguments: '{"city":"Lyon"}' } }] });
    expect(JSON.parse(messages.at(-1).content)).toEqual({ city: 'Lyon', celsius: 18 });
  });

  it('continues a conversation whose earlier turns it sends as item references', async () => {
    context.double.script('alpha', { kind: 'text', text: 'Paris.' }, { kind: 'text', text: 'About two million.' });
    const bodies: Array<{ input: Array<Record<string, unknown>> }> = [];
    const recording = createOpenAI({
      baseURL: `${context.deployment.url()}/v1`,
      apiKey: context.key.key,
      fetch: async (url, init) => {
        bodies.push(JSON.parse(String(init?.body)));
        return fetch(url, init);
      },
    });
    const first = await generateText({ model: recording('svc/alpha'), prompt: 'Capital of France?' });
    const second = await generateText({
      model: recording('svc/alpha'),
      messages: [{ role: 'user', content: 'Capital of France?' }, ...first.response.messages, { role: 'user', content: 'Its population?' }],
    });
    expect(second.text).toBe('About two million.');
    expect(bodies[1]!.input[1]).toEqual({ type: 'item_reference', id: expect.stringMatching(/^msg_[0-9a-f]{32}_0$/) });
    const sent = context.double.requests[1]!.body.messages;
    expect(sent).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Capital of France?' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Paris.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Its population?' }] },
    ]);
  });

  it('streams text with a tool call', async () => {
    context.double.script('alpha', { kind: 'tool_call', name: 'weather', arguments: '{"city":"Nice"}', argumentChunks: 3 }, { kind: 'text', chunks: ['Nice ', 'is ', 'warm.'] });
    const result = streamText({ model: openai()('svc/alpha'), prompt: 'Weather in Nice?', tools: { weather: weatherTool }, stopWhen: stepCountIs(3) });
    let text = '';
    for await (const piece of result.textStream) text += piece;
    expect(text).toBe('Nice is warm.');
    const steps = await result.steps;
    expect(steps[0]!.toolResults[0]).toMatchObject({ toolName: 'weather', output: { city: 'Nice', celsius: 18 } });
  });
});

describe('LangChain ChatOpenAI with useResponsesApi', () => {
  const model = () => new ChatOpenAI({ model: 'svc/alpha', useResponsesApi: true, apiKey: context.key.key, configuration: { baseURL: `${context.deployment.url()}/v1` }, maxRetries: 0 });

  it('invokes', async () => {
    context.double.script('alpha', { kind: 'text', text: 'Bonjour from LangChain' });
    const message = await model().invoke('Say bonjour');
    expect(message.text).toBe('Bonjour from LangChain');
    expect(message.usage_metadata?.output_tokens).toBeGreaterThan(0);
  });

  it('streams', async () => {
    context.double.script('alpha', { kind: 'text', chunks: ['one ', 'two ', 'three'] });
    let text = '';
    for await (const chunk of await model().stream('Count')) text += chunk.text;
    expect(text).toBe('one two three');
  });

  it('binds tools and returns tool calls', async () => {
    context.double.script('alpha', { kind: 'tool_call', name: 'weather', arguments: '{"city":"Bern"}' });
    const message = await model()
      .bindTools([{ type: 'function', function: { name: 'weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }])
      .invoke('Weather in Bern?');
    expect(message.tool_calls?.[0]).toMatchObject({ name: 'weather', args: { city: 'Bern' } });
  });
});
