import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { readSse } from '../doubles/sse.js';
import { alphaAlias, anthropicClient, eventData, hello, postMessages, weatherTool, type MessagesContext } from './messages-context.js';

// An Anthropic client on an OpenAI-wire model (svc/alpha on the OpenAI double): the double must
// receive a correct Chat Completions request (system message, tools as functions, tool_use as
// assistant tool_calls, tool_result as tool messages, images as image_url parts, thinking dropped),
// and the client must get Anthropic blocks back (tool_calls as tool_use with parsed input, finish
// reasons as stop reasons).

interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The text of a Chat Completions content (a string, or text parts joined). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { type?: string; text?: string }) => (part.type === 'text' ? part.text : '')).join('');
  return '';
}

export function describeMessagesTranslation(context: MessagesContext): void {
  describe('on an OpenAI-wire model', () => {
    it('translates the request to Chat Completions and the answer back to an Anthropic message', async () => {
      context.openai.script('alpha', { kind: 'text', text: 'Hi from alpha', usage: { prompt_tokens: 9, completion_tokens: 4 } });
      const message = await anthropicClient(context).messages.create({ model: 'svc/alpha', max_tokens: 100, system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }], messages: hello });
      expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'svc/alpha', content: [{ type: 'text', text: 'Hi from alpha' }], stop_reason: 'end_turn', usage: { input_tokens: 9, output_tokens: 4 } });
      expect(message.id).toMatch(/^msg_/);
      const body = context.openai.requests[0]!.body;
      expect(body.model).toBe('alpha');
      const messages = body.messages as ChatMessage[];
      expect(messages.map((entry) => [entry.role, textOf(entry.content)])).toEqual([
        ['system', 'Be brief.'],
        ['user', 'Say hello'],
      ]);
      expect(body.max_tokens ?? body.max_completion_tokens).toBe(100);
      // Anthropic-only fields have no place in a Chat Completions body.
      for (const field of ['system', 'thinking', 'cache_control', 'anthropic_version']) expect(body[field]).toBeUndefined();
    });

    it("caps the client's max_tokens at the catalog's output limit of a translated model (Claude Code asks 64,000)", async () => {
      context.openai.script('alpha', { kind: 'text', text: 'capped' });
      // Streamed, as Claude Code does (the SDK refuses a non-streamed request this large).
      await anthropicClient(context).messages.stream({ model: 'svc/alpha', max_tokens: 64_000, messages: hello }).finalMessage();
      const body = context.openai.requests[0]!.body;
      // svc/alpha's max_output_tokens in the test catalog is 1000.
      expect(body.max_tokens ?? body.max_completion_tokens).toBe(1000);
    });

    it('maps finish_reason length to stop_reason max_tokens', async () => {
      context.openai.script('alpha', { kind: 'text', text: 'cut sh', finishReason: 'length' });
      const message = await anthropicClient(context).messages.create({ model: 'svc/alpha', max_tokens: 2, messages: hello });
      expect(message.stop_reason).toBe('max_tokens');
    });

    it('answers to a catalog alias with the name the client asked for', async () => {
      context.openai.script('alpha', { kind: 'text', text: 'aliased alpha' });
      const message = await anthropicClient(context).messages.create({ model: alphaAlias, max_tokens: 50, messages: hello });
      expect(message).toMatchObject({ model: alphaAlias, content: [{ type: 'text', text: 'aliased alpha' }] });
      expect(context.openai.requests.map((request) => request.model)).toEqual(['alpha']);
    });

    it('round-trips a tool call: tools as functions, tool_calls as tool_use, tool_result as a tool message, thinking dropped', async () => {
      context.openai.script('alpha', { kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Paris"}' });
      const client = anthropicClient(context);
      const first = await client.messages.create({ model: 'svc/alpha', max_tokens: 200, tools: [weatherTool], messages: hello });
      expect(first.stop_reason).toBe('tool_use');
      const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
      expect(call).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
      expect(typeof call.id).toBe('string');
      const tools = context.openai.requests[0]!.body.tools as unknown[];
      expect(tools).toHaveLength(1);
      expect(tools[0]).toMatchObject({ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: weatherTool.input_schema } });

      context.openai.script('alpha', { kind: 'text', text: 'Sunny.' });
      const second = await client.messages.create({
        model: 'svc/alpha',
        max_tokens: 200,
        tools: [weatherTool],
        messages: [
          ...hello,
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'secret chain of thought', signature: 'sig-not-for-openai' }, ...(first.content as Anthropic.ContentBlockParam[])] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"sky":"clear"}' }] },
        ],
      });
      expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'Sunny.' })]);
      const body = context.openai.requests[1]!.body;
      const messages = body.messages as ChatMessage[];
      const assistant = messages.find((entry) => entry.role === 'assistant')!;
      expect(assistant.tool_calls).toHaveLength(1);
      expect(assistant.tool_calls![0]).toMatchObject({ id: call.id, type: 'function', function: { name: 'get_weather' } });
      expect(JSON.parse(assistant.tool_calls![0]!.function.arguments)).toEqual({ city: 'Paris' });
      const tool = messages.at(-1)!;
      expect(tool).toMatchObject({ role: 'tool', tool_call_id: call.id });
      expect(textOf(tool.content)).toBe('{"sky":"clear"}');
      expect(JSON.stringify(body)).not.toContain('secret chain of thought');
    });

    it('streams a tool call the client reassembles, in Anthropic events', async () => {
      context.openai.script('alpha', { kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Lyon"}', argumentChunks: 4 });
      const final = await anthropicClient(context).messages.stream({ model: 'svc/alpha', max_tokens: 200, tools: [weatherTool], messages: hello }).finalMessage();
      expect(final.stop_reason).toBe('tool_use');
      expect(final.content.filter((block) => block.type === 'tool_use')).toEqual([expect.objectContaining({ name: 'get_weather', input: { city: 'Lyon' } })]);

      context.openai.script('alpha', { kind: 'text', chunks: ['streamed', ' from', ' alpha'] });
      const response = await postMessages(context, { model: 'svc/alpha', max_tokens: 50, messages: hello, stream: true });
      const events = eventData((await readSse(response)).events);
      expect(events[0]!.type).toBe('message_start');
      expect(events[0]!.message!.model).toBe('svc/alpha');
      expect(events.slice(-2).map((event) => event.type)).toEqual(['message_delta', 'message_stop']);
      expect(events.filter((event) => event.delta?.type === 'text_delta').map((event) => event.delta!.text).join('')).toBe('streamed from alpha');
      expect(events.at(-2)!.delta!.stop_reason).toBe('end_turn');
    });

    it('sends image blocks as image_url parts', async () => {
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
      context.openai.script('alpha', { kind: 'text', text: 'A dot.' });
      await anthropicClient(context).messages.create({
        model: 'svc/alpha',
        max_tokens: 50,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }, { type: 'text', text: 'What is this?' }] }],
      });
      const user = (context.openai.requests[0]!.body.messages as ChatMessage[]).find((entry) => entry.role === 'user')!;
      expect(user.content).toEqual([
        { type: 'image_url', image_url: expect.objectContaining({ url: `data:image/png;base64,${png}` }) },
        { type: 'text', text: 'What is this?' },
      ]);
    });

    it("keeps Claude Code's mid-conversation role system entries as system messages", async () => {
      context.openai.script('alpha', { kind: 'text', text: 'ok' });
      const response = await postMessages(
        context,
        { model: 'svc/alpha', max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'text', text: 'say hi' }] }, { role: 'system', content: 'Available agent types: none.' }] },
        { headers: { 'anthropic-beta': 'claude-code-20250219,mid-conversation-system-2026-04-07' } },
      );
      expect(response.status).toBe(200);
      const messages = context.openai.requests[0]!.body.messages as ChatMessage[];
      expect(messages.map((entry) => [entry.role, textOf(entry.content)])).toEqual([
        ['user', 'say hi'],
        ['system', 'Available agent types: none.'],
      ]);
    });
  });
}
