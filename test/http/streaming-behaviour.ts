import { describe, expect, it } from 'vitest';
import { parseSseText, readSse } from '../doubles/sse.js';
import { chat, hello } from '../support/api-client.js';
import type { GatewayContext } from './gateway-context.js';

export function describeStreaming(context: GatewayContext): void {
  describe('responses and streams', () => {
    it('answers a non-streaming completion in the spec shape', async () => {
      context.double.script('alpha', { kind: 'text', text: 'Hello there', usage: { prompt_tokens: 9, completion_tokens: 3 } });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/application\/json/);
      const body = await response.json();
      expect(body).toMatchObject({
        object: 'chat.completion',
        model: 'svc/alpha',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
      });
      expect(body.id).toMatch(/^chatcmpl-/);
      expect(Number.isInteger(body.created)).toBe(true);
      expect(context.double.requests[0]!.body.model).toBe('alpha');
      expect(context.double.requests[0]!.headers.authorization).toBe('Bearer upstream-secret-key');
    });

    it('returns n choices, each with its index', async () => {
      context.double.script('alpha', { kind: 'text', text: 'Hi', usage: { prompt_tokens: 5, completion_tokens: 4 } });
      const body = await (await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, n: 3 })).json();
      expect(body.choices.map((choice: { index: number }) => choice.index)).toEqual([0, 1, 2]);
    });

    it('streams with the exact SSE framing: role chunk, content chunks, final empty delta, [DONE]', async () => {
      context.double.script('alpha', { kind: 'text', chunks: ['Hel', 'lo', ' world'], usage: { prompt_tokens: 9, completion_tokens: 3 } });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, stream: true });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      const { raw } = await readSse(response);
      // Every event is exactly one `data: ` line followed by a blank line.
      expect(raw).toMatch(/^(data: [^\n]+\n\n)+$/);
      const events = parseSseText(raw);
      expect(events.at(-1)!.data).toBe('[DONE]');
      const chunks = events.slice(0, -1).map((event) => JSON.parse(event.data));
      expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
      for (const chunk of chunks) {
        expect(chunk).toMatchObject({ object: 'chat.completion.chunk', model: 'svc/alpha' });
        expect(Number.isInteger(chunk.created)).toBe(true);
        expect(chunk.usage).toBeUndefined();
      }
      expect(chunks[0].choices).toEqual([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
      const middle = chunks.slice(1, -1);
      expect(middle.every((chunk) => chunk.choices[0].finish_reason === null && typeof chunk.choices[0].delta.content === 'string')).toBe(true);
      expect(middle.map((chunk) => chunk.choices[0].delta.content).join('')).toBe('Hello world');
      expect(chunks.at(-1).choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
      // The gateway always asks upstream for usage so billing is exact.
      expect(context.double.requests[0]!.body.stream_options).toEqual({ include_usage: true });
    });

    it('adds the usage chunk only when the client asks for it', async () => {
      context.double.script('alpha', { kind: 'text', chunks: ['a', 'b'], usage: { prompt_tokens: 7, completion_tokens: 2 } });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, stream: true, stream_options: { include_usage: true } });
      const events = (await readSse(response)).events;
      expect(events.at(-1)!.data).toBe('[DONE]');
      const chunks = events.slice(0, -1).map((event) => JSON.parse(event.data));
      const usageChunk = chunks.at(-1);
      expect(usageChunk.choices).toEqual([]);
      expect(usageChunk.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
      expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
      expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    });

    it('streams tool calls as tool_call deltas and ends with finish_reason tool_calls', async () => {
      context.double.script('alpha', { kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}', argumentChunks: 4, startIndex: 1 });
      const response = await chat(context.deployment, context.key.key, {
        model: 'svc/alpha',
        messages: hello,
        stream: true,
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      });
      const chunks = (await readSse(response)).events.slice(0, -1).map((event) => JSON.parse(event.data));
      const calls = chunks.flatMap((chunk) => chunk.choices[0]?.delta?.tool_calls ?? []);
      expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
      expect(calls[0].id).toMatch(/^call_/);
      expect(calls.every((call: { index: number }) => call.index === 0)).toBe(true);
      expect(calls.map((call: { function?: { arguments?: string } }) => call.function?.arguments ?? '').join('')).toBe('{"city":"Paris","unit":"c"}');
      expect(chunks.at(-1).choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
    });

    it('returns tool calls in the non-streaming message', async () => {
      context.double.script('alpha', { kind: 'tool_call', name: 'lookup', arguments: '{"q":1}' });
      const body = await (await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, tools: [{ type: 'function', function: { name: 'lookup' } }] })).json();
      expect(body.choices[0].finish_reason).toBe('tool_calls');
      expect(body.choices[0].message.tool_calls[0]).toMatchObject({ type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } });
    });

    it('replays a recorded OpenAI stream faithfully', async () => {
      context.double.script('alpha', { kind: 'fixture', file: 'openai-text.include_usage.chunks.jsonl' });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, stream: true, stream_options: { include_usage: true } });
      const chunks = (await readSse(response)).events.slice(0, -1).map((event) => JSON.parse(event.data));
      const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('');
      expect(text.length).toBeGreaterThan(100);
      const usage = chunks.at(-1).usage;
      expect(usage.prompt_tokens).toBeGreaterThan(0);
      expect(usage.completion_tokens).toBeGreaterThan(0);
    });

    it('interleaves n streamed choices with their indices', async () => {
      context.double.script('alpha', { kind: 'text', chunks: ['x', 'y'], usage: { prompt_tokens: 3, completion_tokens: 4 } });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, stream: true, n: 2 });
      const chunks = (await readSse(response)).events.slice(0, -1).map((event) => JSON.parse(event.data));
      const finishes = chunks.filter((chunk) => chunk.choices[0].finish_reason).map((chunk) => chunk.choices[0].index).sort();
      expect(finishes).toEqual([0, 1]);
      const roles = chunks.filter((chunk) => chunk.choices[0].delta.role === 'assistant').map((chunk) => chunk.choices[0].index);
      expect(roles).toEqual([0, 1]);
    });
  });
}
