import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { hello } from '../support/api-client.js';
import type { GatewayContext } from './gateway-context.js';

// The official client, unchanged but for the base URL and the key.

export function describeOpenAiClient(context: GatewayContext): void {
  describe('the official openai client', () => {
    const client = () => new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: context.key.key, maxRetries: 0 });
    const messages = hello as OpenAI.Chat.ChatCompletionMessageParam[];

    it('creates a completion', async () => {
      context.double.script('alpha', { kind: 'text', text: 'Hi from the client test', usage: { prompt_tokens: 6, completion_tokens: 5 } });
      const completion = await client().chat.completions.create({ model: 'svc/alpha', messages });
      expect(completion.choices[0]!.message.content).toBe('Hi from the client test');
      expect(completion.usage?.total_tokens).toBe(11);
    });

    it('streams a completion', async () => {
      context.double.script('alpha', { kind: 'text', chunks: ['one ', 'two ', 'three'] });
      const stream = await client().chat.completions.create({ model: 'svc/alpha', messages, stream: true, stream_options: { include_usage: true } });
      let text = '';
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toBe('one two three');
      expect(usage?.completion_tokens).toBeGreaterThan(0);
    });

    it('returns n > 1 choices', async () => {
      const completion = await client().chat.completions.create({ model: 'svc/alpha', messages, n: 2 });
      expect(completion.choices).toHaveLength(2);
    });

    it('round-trips tool calls', async () => {
      context.double.script('alpha', { kind: 'tool_call', name: 'get_time', arguments: '{"zone":"UTC"}' });
      const completion = await client().chat.completions.create({
        model: 'svc/alpha',
        messages,
        tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } }],
      });
      const call = completion.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      expect(call.function).toEqual({ name: 'get_time', arguments: '{"zone":"UTC"}' });
      context.double.script('alpha', { kind: 'text', text: 'It is noon.' });
      const followUp = await client().chat.completions.create({
        model: 'svc/alpha',
        messages: [...messages, completion.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '12:00' }],
      });
      expect(followUp.choices[0]!.message.content).toBe('It is noon.');
    });

    it('streams tool calls that the client can reassemble', async () => {
      context.double.script('alpha', { kind: 'tool_call', name: 'get_time', arguments: '{"zone":"Europe/Paris"}', argumentChunks: 5 });
      const runner = client().chat.completions.stream({ model: 'svc/alpha', messages, tools: [{ type: 'function', function: { name: 'get_time' } }] });
      const final = await runner.finalChatCompletion();
      const call = final.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      expect(call.function.arguments).toBe('{"zone":"Europe/Paris"}');
    });

    it('lists models', async () => {
      const ids: string[] = [];
      for await (const model of client().models.list()) ids.push(model.id);
      expect(ids).toContain('svc/alpha');
    });

    it('raises AuthenticationError for a bad key', async () => {
      const bad = new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: 'sk-service-wrong', maxRetries: 0 });
      const error = await bad.chat.completions.create({ model: 'svc/alpha', messages }).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error.code).toBe('invalid_api_key');
    });

    it('throws from the stream when the model fails mid-stream', async () => {
      context.double.script('alpha', { kind: 'midstream_drop', chunksBeforeDrop: 2 });
      const stream = await client().chat.completions.create({ model: 'svc/alpha', messages, stream: true });
      let text = '';
      const error = await (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      })().catch((caught) => caught);
      expect(text.length).toBeGreaterThan(0);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(String(error.message)).toMatch(/failed after the response began/);
    });
  });
}
