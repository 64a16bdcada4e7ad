import Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readSse } from '../doubles/sse.js';
import { eventData, type MessagesContext } from './messages-context.js';

// Same wire in and out: an Anthropic client on an Anthropic-wire model gets its request to the
// provider exactly as sent (system blocks with cache_control, tools, tool_use/tool_result, thinking
// with signatures, redacted thinking, documents, images, unknown fields, anthropic-version and
// anthropic-beta), only `model` rewritten to the upstream name. Thinking signatures in particular
// must survive byte for byte, or the next turn is refused by the provider.

interface RecordedExchange {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

const recording = JSON.parse(readFileSync(new URL('../fixtures/claude-code/tool-round-trip.json', import.meta.url), 'utf8')) as { exchanges: RecordedExchange[] };
const recordedPosts = recording.exchanges.filter((exchange) => exchange.method === 'POST' && exchange.url.startsWith('/v1/messages'));

/** The headers Claude Code sent, with our key in place of the redacted one and transport headers left to fetch. */
function claudeCodeHeaders(recorded: Record<string, string>, key: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(recorded)) if (!['host', 'content-length', 'connection', 'accept-encoding', 'x-api-key'].includes(name)) headers[name] = value;
  return { ...headers, 'x-api-key': key };
}

const pdf = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n').toString('base64');
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** A conversation using every block kind the API takes back, and fields the gateway has no schema for. */
const everything = {
  model: 'svc/claude-test',
  max_tokens: 4096,
  system: [
    { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.197.a63; cc_entrypoint=sdk-cli;' },
    { type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral', ttl: '1h' } },
  ],
  tools: [
    { name: 'Bash', description: 'Run a command', input_schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { command: { type: 'string' } }, required: ['command'], additionalProperties: false } },
    { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } }, cache_control: { type: 'ephemeral' } },
  ],
  tool_choice: { type: 'auto', disable_parallel_tool_use: true },
  thinking: { type: 'enabled', budget_tokens: 2048 },
  metadata: { user_id: '{"device_id":"0000","account_uuid":"","session_id":"5e55"}' },
  stop_sequences: ['\n\nHuman:'],
  top_k: 40,
  context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
  output_config: { effort: 'high' },
  some_future_field: { nested: [1, 'two', null] },
  messages: [
    {
      role: 'user',
      content: [
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf }, title: 'spec.pdf', cache_control: { type: 'ephemeral' } },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' }, citations: { enabled: true } },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/diagram.png' } },
        { type: 'text', text: 'Run the tests.' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should run the tests first.', signature: 'EqQBCkYIBxgCKkBsignature/with+base64==' },
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw==' },
        { type: 'text', text: 'Running them.' },
        { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'Bash', input: { command: 'npm test' } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01A09q90qw90lq917835lq9',
          is_error: true,
          content: [
            { type: 'text', text: '1 failing' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
          ],
          cache_control: { type: 'ephemeral' },
        },
        { type: 'text', text: 'Fix it.' },
      ],
    },
  ],
};

export function describeMessagesLossless(context: MessagesContext): void {
  describe('pass-through to an Anthropic-wire model', () => {
    it('forwards every block, field and beta header the client sent, rewriting only the model', async () => {
      context.anthropic.script('claude-test', { kind: 'text', text: 'Fixed.' });
      let sent: Headers | undefined;
      const client = new Anthropic({
        baseURL: context.deployment.url(),
        apiKey: context.key.key,
        maxRetries: 0,
        fetch: (url, init) => {
          sent = new Headers(init?.headers);
          return fetch(url, init);
        },
      });
      const betas = 'interleaved-thinking-2025-05-14,context-management-2025-06-27,extended-cache-ttl-2025-04-11';
      const message = await client.messages.create(everything as unknown as Anthropic.MessageCreateParamsNonStreaming, { headers: { 'anthropic-beta': betas } });
      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Fixed.' })]);
      const [upstream] = context.anthropic.requests;
      expect(upstream!.body).toEqual({ ...everything, model: 'claude-test' });
      expect(upstream!.headers['anthropic-beta']).toBe(betas);
      expect(upstream!.headers['anthropic-version']).toBe(sent!.get('anthropic-version'));
    });

    it.each(recordedPosts.map((exchange, turn) => [turn + 1, exchange] as const))("forwards Claude Code's recorded request %i unchanged but for the model, and streams the answer back", async (_turn, exchange) => {
      context.anthropic.script('claude-test', { kind: 'blocks', blocks: [{ type: 'thinking', thinking: 'Short answer.', signature: 'sig-recorded-turn' }, { type: 'text', text: 'Hi from the double.' }] });
      const response = await fetch(`${context.deployment.url()}${exchange.url}`, { method: 'POST', headers: claudeCodeHeaders(exchange.headers, context.key.key), body: JSON.stringify(exchange.body) });
      expect(response.status).toBe(200);
      const events = eventData((await readSse(response)).events);
      // The recorded model is Claude Code's default, claude-opus-4-8: a catalog alias of svc/claude-test.
      expect(exchange.body.model).toBe('claude-opus-4-8');
      expect(events[0]!.message!.model).toBe('claude-opus-4-8');
      expect(events.filter((event) => event.delta?.type === 'text_delta').map((event) => event.delta!.text).join('')).toBe('Hi from the double.');
      expect(events.find((event) => event.delta?.type === 'signature_delta')!.delta).toEqual({ type: 'signature_delta', signature: 'sig-recorded-turn' });
      const [upstream] = context.anthropic.requests;
      expect(upstream!.body).toEqual({ ...exchange.body, model: 'claude-test' });
      expect(upstream!.headers['anthropic-beta']).toBe(exchange.headers['anthropic-beta']);
      expect(upstream!.headers['anthropic-version']).toBe(exchange.headers['anthropic-version']);
    });
  });
}
