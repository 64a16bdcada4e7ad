import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import type { AnthropicAnswerBlock } from '../doubles/anthropic-provider-double.js';
import { readSse } from '../doubles/sse.js';
import { createKey, eventually } from '../support/api-client.js';
import type { DeploymentKind } from '../support/gateway-harness.js';
import { describeMessagesErrors } from './messages-errors-behaviour.js';
import { describeMessagesLossless } from './messages-lossless-behaviour.js';
import { describeMessagesTranslation } from './messages-translation-behaviour.js';
import { anthropicClient, anthropicUpstreamKey, eventData, hello, ledgerOf, postMessages, useMessagesGateway, weatherTool, type MessagesContext } from './messages-context.js';

// The Anthropic Messages API as a client surface of the gateway (POST /v1/messages and
// /v1/messages/count_tokens), seen through the official @anthropic-ai/sdk client and raw HTTP as
// Claude Code speaks it. Anthropic-wire targets get the request as sent; OpenAI-wire targets a
// translation; both answer in Anthropic's shapes, on the same pipeline as Chat Completions.

export function describeMessagesSurface(kind: DeploymentKind): void {
  describe('Anthropic Messages surface (/v1/messages)', () => {
    const context = useMessagesGateway(kind);
    describeMessagesBasics(context);
    describeMessagesErrors(context);
    describeMessagesTranslation(context);
    describeMessagesLossless(context);
  });
}

export function describeMessagesBasics(context: MessagesContext): void {
  describe('on an Anthropic-wire model', () => {
    it("creates a message: Anthropic's message object, the model asked for, the upstream usage with its cache fields", async () => {
      context.anthropic.script('claude-test', { kind: 'blocks', blocks: [{ type: 'text', text: 'Hello there!' }], usage: { input_tokens: 11, output_tokens: 6, cache_creation_input_tokens: 100, cache_read_input_tokens: 200 } });
      const { data: message, response } = await anthropicClient(context).messages.create({ model: 'svc/claude-test', max_tokens: 256, system: 'Answer briefly.', messages: hello }).withResponse();
      expect(message).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: 'svc/claude-test',
        content: [{ type: 'text', text: 'Hello there!' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 11, output_tokens: 6, cache_creation_input_tokens: 100, cache_read_input_tokens: 200 },
      });
      expect(message.id).toMatch(/^msg_/);
      expect(response.headers.get('request-id')).toBeTruthy();
      expect(response.headers.get('x-request-id')).toBeTruthy();
      const [upstream] = context.anthropic.requests;
      expect(upstream!.body).toMatchObject({ model: 'claude-test', max_tokens: 256, system: 'Answer briefly.', messages: hello });
      // The gateway's own provider key goes upstream, never the client's.
      expect(upstream!.headers['x-api-key'] ?? upstream!.headers.authorization?.replace(/^Bearer /, '')).toBe(anthropicUpstreamKey);
      expect(JSON.stringify(upstream!.headers)).not.toContain(context.key.key);
    });

    it.each(['claude-opus-4-8', 'claude-sonnet-5', 'claude-haiku-4-5-20251001'])('answers to the catalog alias %s (a name Claude Code sends)', async (alias) => {
      context.anthropic.script('claude-test', { kind: 'text', text: 'aliased' });
      const message = await anthropicClient(context).messages.create({ model: alias, max_tokens: 64, messages: hello });
      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'aliased' })]);
      expect(message.model).toBe(alias);
      expect(context.anthropic.requests.map((request) => request.model)).toEqual(['claude-test']);
    });

    it('streams text: every event named as its type, in the documented order', async () => {
      context.anthropic.script('claude-test', { kind: 'blocks', blocks: [{ type: 'text', text: 'one two three' }], usage: { input_tokens: 9, output_tokens: 3 } });
      const response = await postMessages(context, { model: 'svc/claude-test', max_tokens: 64, messages: hello, stream: true });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(response.headers.get('request-id')).toBeTruthy();
      const events = eventData((await readSse(response)).events);
      // Runs of deltas collapsed: a gateway may batch them, never reorder or drop a kind.
      const kinds = events.map((event) => event.type).filter((type, position, all) => type !== all[position - 1]);
      expect(kinds).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
      const start = events[0]!.message!;
      expect(start).toMatchObject({ type: 'message', role: 'assistant', model: 'svc/claude-test', content: [] });
      expect(start.id).toMatch(/^msg_/);
      expect(events.filter((event) => event.type === 'content_block_delta').map((event) => event.delta?.text).join('')).toBe('one two three');
      const end = events.at(-2)!;
      expect(end).toMatchObject({ delta: { stop_reason: 'end_turn', stop_sequence: null } });
      // Clients lay message_delta's usage over message_start's (the gateway may only know it at the end).
      expect({ ...(start.usage as object), ...(end.usage as object) }).toMatchObject({ input_tokens: 9, output_tokens: 3 });
    });

    it('streams thinking with its signature, redacted thinking and a tool call; the client rebuilds every block', async () => {
      const blocks: AnthropicAnswerBlock[] = [
        { type: 'thinking', thinking: 'The user wants the weather in Paris.', signature: 'EqQBCkYIBxgCKkB-signature-1==' },
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix-redacted==' },
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_01StreamedCall', name: 'get_weather', input: { city: 'Paris', units: ['c'] } },
      ];
      context.anthropic.script('claude-test', { kind: 'blocks', blocks, usage: { input_tokens: 40, output_tokens: 25, cache_read_input_tokens: 1000 } });
      const stream = anthropicClient(context).messages.stream({ model: 'svc/claude-test', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, tools: [weatherTool], messages: hello });
      const seen: string[] = [];
      stream.on('streamEvent', (event) => seen.push(event.type === 'content_block_delta' ? `${event.index}:${event.delta.type}` : 'index' in event ? `${event.index}:${event.type}` : event.type));
      const final = await stream.finalMessage();
      expect(final.content).toEqual(blocks.map((block) => expect.objectContaining(block)));
      expect(final).toMatchObject({ model: 'svc/claude-test', stop_reason: 'tool_use', usage: { input_tokens: 40, output_tokens: 25, cache_read_input_tokens: 1000 } });
      const compact = seen.filter((entry, position) => entry !== seen[position - 1]);
      expect(compact).toEqual([
        'message_start',
        '0:content_block_start',
        '0:thinking_delta',
        '0:signature_delta',
        '0:content_block_stop',
        '1:content_block_start',
        '1:content_block_stop',
        '2:content_block_start',
        '2:text_delta',
        '2:content_block_stop',
        '3:content_block_start',
        '3:input_json_delta',
        '3:content_block_stop',
        'message_delta',
        'message_stop',
      ]);
    });

    it('cancels the upstream call when the client stops reading a stream', async () => {
      context.anthropic.script('claude-test', { kind: 'text', chunks: Array.from({ length: 40 }, (_, index) => `word${index} `), chunkDelayMs: 100 });
      const stream = anthropicClient(context).messages.stream({ model: 'svc/claude-test', max_tokens: 512, messages: hello });
      let text = '';
      for await (const event of stream) {
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
        if (text.length > 0) break;
      }
      expect(text).toMatch(/^word0/);
      // Leaving the loop aborts the request; nobody should keep paying for tokens no one reads.
      await eventually(() => expect(context.anthropic.aborted).toEqual(['claude-test']), 2000);
    });

    it('round-trips a tool call: tool_use out, tool_result back, the answer after it', async () => {
      context.anthropic.script('claude-test', { kind: 'tool_use', name: 'get_weather', input: { city: 'Paris' } }, { kind: 'text', text: 'It is sunny in Paris.' });
      const client = anthropicClient(context);
      const first = await client.messages.create({ model: 'svc/claude-test', max_tokens: 256, tools: [weatherTool], messages: hello });
      expect(first.stop_reason).toBe('tool_use');
      const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
      expect(call).toMatchObject({ name: 'get_weather', input: { city: 'Paris' } });
      expect(call.id).toMatch(/^toolu_/);
      const history: Anthropic.MessageParam[] = [
        ...hello,
        { role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"sky":"clear"}' }] },
      ];
      const second = await client.messages.create({ model: 'svc/claude-test', max_tokens: 256, tools: [weatherTool], messages: history });
      expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'It is sunny in Paris.' })]);
      // The double refuses a tool_result that answers no tool_use of the turn before: this one arrived paired.
      expect(context.anthropic.requests[1]!.body.messages).toEqual(JSON.parse(JSON.stringify(history)));
    });

    it('counts tokens, more for a longer prompt, by id, by alias and with ?beta=true', async () => {
      const client = anthropicClient(context);
      const short = await client.messages.countTokens({ model: 'svc/claude-test', messages: hello });
      const long = await client.messages.countTokens({ model: 'svc/claude-test', system: 'You are a careful assistant. '.repeat(50), tools: [weatherTool], messages: hello });
      expect(Number.isInteger(short.input_tokens) && short.input_tokens > 0).toBe(true);
      expect(long.input_tokens).toBeGreaterThan(short.input_tokens);
      const aliased = await client.messages.countTokens({ model: 'claude-opus-4-8', messages: hello });
      expect(aliased.input_tokens).toBeGreaterThan(0);
      const raw = await postMessages(context, { model: 'svc/claude-test', messages: hello }, { path: '/v1/messages/count_tokens?beta=true', headers: { 'anthropic-beta': 'token-counting-2024-11-01' } });
      expect(raw.status).toBe(200);
      expect(Object.keys(await raw.json())).toEqual(['input_tokens']);
    });

    it('accepts the key as x-api-key or as a Bearer token, and tolerates ?beta=true', async () => {
      context.anthropic.script('claude-test', { kind: 'text', text: 'ok' });
      const viaHeader = await postMessages(context, { model: 'svc/claude-test', max_tokens: 16, messages: hello }, { path: '/v1/messages?beta=true' });
      expect(viaHeader.status).toBe(200);
      expect(await viaHeader.json()).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'ok' }] });
      const viaBearer = await fetch(`${context.deployment.url()}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', authorization: `Bearer ${context.key.key}` },
        body: JSON.stringify({ model: 'svc/claude-test', max_tokens: 16, messages: hello }),
      });
      expect(viaBearer.status).toBe(200);
    });

    it('records the request in the ledger with the served model, its tokens and cost, as for Chat Completions', async () => {
      const key = await createKey(context.deployment, { name: 'messages ledger' });
      context.anthropic.script('claude-test', { kind: 'text', text: 'billed', usage: { input_tokens: 11, output_tokens: 6 } });
      await anthropicClient(context, key.key).messages.create({ model: 'svc/claude-test', max_tokens: 64, messages: hello });
      context.anthropic.script('claude-test', { kind: 'text', chunks: ['billed', ' again'], usage: { input_tokens: 20, output_tokens: 2 } });
      await anthropicClient(context, key.key).messages.stream({ model: 'claude-opus-4-8', max_tokens: 64, messages: hello }).finalMessage();
      const entries = await ledgerOf(context, key.id, 2);
      const plain = entries.find((entry) => !entry.stream)!;
      const streamed = entries.find((entry) => entry.stream)!;
      // svc/claude-test costs $3 / $15 per million: 11 * 3e-6 + 6 * 15e-6 = $0.000123.
      expect(plain).toMatchObject({ requestedModel: 'svc/claude-test', servedModel: 'svc/claude-test', promptTokens: 11, completionTokens: 6, costNanos: 123_000, status: 200 });
      expect(streamed).toMatchObject({ servedModel: 'svc/claude-test', promptTokens: 20, completionTokens: 2, status: 200 });
    });
  });
}
