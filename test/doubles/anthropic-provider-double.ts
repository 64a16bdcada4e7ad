// Wire-faithful test double of the Anthropic Messages API (POST /v1/messages), built on node:http.
// Shapes follow /work/shared/fixtures/anthropic and FORMATS.md: `x-api-key` and `anthropic-version`
// headers, required max_tokens, top-level system, `event:` + `data:` stream framing, error bodies
// {"type":"error","error":{type,message},"request_id"} including 529 overloaded_error, and the
// mid-stream `event: error` that can follow an HTTP 200. Answers are scripted as content blocks
// (text, thinking with its signature, redacted_thinking, tool_use) streamed with the delta types the
// API uses, with cache usage fields; `/v1/messages/count_tokens` answers too. Each request is
// recorded with its path and query, headers and parsed body, so tests can check what arrived.
import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SHARED_FIXTURES_DIR } from './openai-provider-double.js';
import { flattenHeaders, readJsonBody, startProviderDoubleServer, type ProviderDouble, type ProviderExchange } from './provider-double-server.js';

export const ANTHROPIC_FIXTURES_DIR = path.join(SHARED_FIXTURES_DIR, 'anthropic');

export interface AnthropicUsageCounts {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  /** The writes by TTL, sent as usage.cache_creation when given. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

/** A content block of an answer, as the API returns it (tool_use ids are made up when left out). */
export type AnthropicAnswerBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id?: string; name: string; input: Record<string, unknown> };

export type AnthropicBehaviour =
  | { kind: 'text'; text?: string; chunks?: string[]; chunkDelayMs?: number; usage?: AnthropicUsageCounts; stopReason?: string }
  | { kind: 'tool_use'; name: string; input: Record<string, unknown>; text?: string; jsonChunks?: number; usage?: AnthropicUsageCounts }
  /**
   * Any sequence of blocks: streamed with text_delta, thinking_delta + signature_delta, input_json_delta
   * (redacted_thinking whole in content_block_start, as the API has no delta for it). stop_reason defaults
   * to tool_use when a tool_use block is present. `errorAfterBlocks` ends the stream with `event: error`
   * (api_error) after that many complete blocks; non-streaming it answers 500.
   */
  | { kind: 'blocks'; blocks: AnthropicAnswerBlock[]; stopReason?: string; usage?: AnthropicUsageCounts; chunkDelayMs?: number; errorAfterBlocks?: number }
  /** An error answer, after `delayMs` (a slow failure, e.g. one call of a fan-out failing late). */
  | { kind: 'error'; status: number; type?: string; message?: string; retryAfter?: string; delayMs?: number }
  /** Streams: HTTP 200, then `event: error` overloaded_error before any content. Non-streaming: 529. */
  | { kind: 'overloaded_event' }
  /** message_start and `chunksBeforeError` text deltas, then `event: error` (api_error). */
  | { kind: 'midstream_error'; chunksBeforeError: number }
  /** message_start and `chunksBeforeDrop` text deltas, then the connection is cut. */
  | { kind: 'midstream_drop'; chunksBeforeDrop: number }
  | { kind: 'hang' }
  /** A file in fixtures/anthropic: `.sse` is replayed as the stream, `.response.json` as the body. */
  | { kind: 'fixture'; file: string };

export interface AnthropicRecordedRequest {
  model: string;
  body: any;
  headers: Record<string, string>;
  /** The request target as received: path and query, e.g. `/v1/messages` or `/v1/messages/count_tokens?beta=true`. */
  url: string;
}

/** Its `url` is `http://127.0.0.1:<port>/v1`; `aborted` holds the models of abandoned requests. */
export interface AnthropicProviderDouble extends ProviderDouble<AnthropicBehaviour, AnthropicRecordedRequest, string> {}

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const errorMessages: Record<string, string> = {
  invalid_request_error: 'Invalid request.',
  authentication_error: 'invalid x-api-key',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'The requested resource could not be found.',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'This request would exceed the rate limit for your organization of 50 input tokens per minute.',
  api_error: 'Internal server error',
  overloaded_error: 'Overloaded',
};

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function base62(length: number): string {
  const bytes = randomBytes(length);
  return Array.from(bytes, (byte) => BASE62[byte % BASE62.length]).join('');
}
const messageId = () => `msg_01${base62(22)}`;
const toolUseId = () => `toolu_01${base62(22)}`;
const requestId = () => `req_011${base62(21)}`;

const roughTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function inputTokens(body: any): number {
  return roughTokens(JSON.stringify(body.messages ?? []) + JSON.stringify(body.system ?? '') + JSON.stringify(body.tools ?? []));
}

function errorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId() });
}

function sseEvent(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** Splits text into word pieces with their leading spaces, as the API streams it. */
function splitWords(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [text];
}

function splitEvenly(text: string, parts: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / parts));
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}

/** The checks the real API makes before it generates anything, in its own words. */
function validate(headers: http.IncomingHttpHeaders, body: any, apiKey: string, countOnly = false): { status: number; type: string; message: string } | undefined {
  // SDK 1.x sends the API key as a Bearer token; older clients and Claude Code's ANTHROPIC_API_KEY use x-api-key.
  if (headers['x-api-key'] !== apiKey && headers.authorization !== `Bearer ${apiKey}`) return { status: 401, type: 'authentication_error', message: 'invalid x-api-key' };
  if (!headers['anthropic-version']) return { status: 400, type: 'invalid_request_error', message: 'anthropic-version: header is required' };
  if (body === undefined) return { status: 400, type: 'invalid_request_error', message: 'There was an error parsing the body of your request.' };
  for (const field of countOnly ? ['model', 'messages'] : ['model', 'max_tokens', 'messages']) {
    if (body[field] === undefined) return { status: 400, type: 'invalid_request_error', message: `${field}: Field required` };
  }
  if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1)) {
    return { status: 400, type: 'invalid_request_error', message: 'temperature: Input should be less than or equal to 1' };
  }
  for (const field of ['n', 'stream_options', 'max_completion_tokens', 'tool_calls']) {
    if (body[field] !== undefined) return { status: 400, type: 'invalid_request_error', message: `${field}: Extra inputs are not permitted` };
  }
  const messages: any[] = body.messages;
  // Claude Code sends `role: "system"` entries mid-conversation under a beta; API version 2026-10-21
  // (SDK 1.x's SystemMessageParam) takes them as standard. Older versions refuse them.
  const systemRoleAllowed =
    String(headers['anthropic-version'] ?? '') >= '2026-10-21' || String(headers['anthropic-beta'] ?? '').split(',').some((beta) => beta.trim().startsWith('mid-conversation-system-'));
  for (const [index, message] of messages.entries()) {
    if (message.role === 'system' && systemRoleAllowed) continue;
    if (message.role !== 'user' && message.role !== 'assistant') {
      return { status: 400, type: 'invalid_request_error', message: `messages: Unexpected role "${message.role}". The Messages API accepts a top-level \`system\` parameter, not "system" as an input message role.` };
    }
    const blocks: any[] = typeof message.content === 'string' ? [] : message.content;
    for (const [position, block] of blocks.entries()) {
      // Thinking must come back exactly as it was given, signature included.
      if (block.type === 'thinking' && typeof block.signature !== 'string') {
        return { status: 400, type: 'invalid_request_error', message: `messages.${index}.content.${position}.thinking.signature: Field required` };
      }
      if (block.type !== 'tool_result') continue;
      // The answering assistant turn is the previous one, mid-conversation system entries aside.
      const before = messages.slice(0, index).filter((candidate) => candidate.role !== 'system').at(-1);
      const previous: any[] = Array.isArray(before?.content) ? before.content : [];
      if (!previous.some((candidate) => candidate.type === 'tool_use' && candidate.id === block.tool_use_id)) {
        return {
          status: 400,
          type: 'invalid_request_error',
          message: `messages.${index}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        };
      }
    }
  }
  return undefined;
}

interface Exchange extends ProviderExchange {
  body: any;
}

function send(ex: Exchange, status: number, text: string, headers: Record<string, string> = {}): void {
  if (ex.closed.signal.aborted) return;
  ex.res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId(), 'content-length': String(Buffer.byteLength(text)), ...headers });
  ex.res.end(text);
}

function openStream(ex: Exchange): void {
  ex.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': requestId() });
  ex.res.flushHeaders();
}

function messageStart(ex: Exchange, input: number | AnthropicUsageCounts): string {
  const usage = typeof input === 'number' ? { input_tokens: input, output_tokens: 1 } : input;
  const message = {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model: ex.body.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: usage.input_tokens, cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0, cache_read_input_tokens: usage.cache_read_input_tokens ?? 0, ...('cache_creation' in usage && usage.cache_creation ? { cache_creation: usage.cache_creation } : {}), output_tokens: 1 },
  };
  return sseEvent('message_start', { message });
}

async function write(ex: Exchange, frames: string[], delayMs = 0): Promise<boolean> {
  for (const frame of frames) {
    if (delayMs > 0) await sleep(delayMs, undefined, { signal: ex.closed.signal }).catch(() => undefined);
    if (ex.closed.signal.aborted) return false;
    ex.res.write(frame);
  }
  return true;
}

function fullMessage(ex: Exchange, content: unknown[], stopReason: string, usage: AnthropicUsageCounts): string {
  return JSON.stringify({
    model: ex.body.model,
    id: messageId(),
    type: 'message',
    role: 'assistant',
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: {
      input_tokens: usage.input_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
      ...(usage.cache_creation ? { cache_creation: usage.cache_creation } : {}),
      output_tokens: usage.output_tokens,
      service_tier: 'standard',
    },
  });
}

function textFrames(index: number, pieces: string[]): string[] {
  return [
    sseEvent('content_block_start', { index, content_block: { type: 'text', text: '' } }),
    sseEvent('ping', {}),
    ...pieces.map((text) => sseEvent('content_block_delta', { index, delta: { type: 'text_delta', text } })),
    sseEvent('content_block_stop', { index }),
  ];
}

function endFrames(stopReason: string, outputTokens: number): string[] {
  return [sseEvent('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } }), sseEvent('message_stop', {})];
}

/** The stream events of one block, deltas split the way the API splits them. */
function blockFrames(index: number, block: AnthropicAnswerBlock): string[] {
  switch (block.type) {
    case 'text':
      return textFrames(index, splitWords(block.text));
    case 'thinking':
      return [
        sseEvent('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }),
        ...splitWords(block.thinking).map((thinking) => sseEvent('content_block_delta', { index, delta: { type: 'thinking_delta', thinking } })),
        sseEvent('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } }),
        sseEvent('content_block_stop', { index }),
      ];
    case 'redacted_thinking':
      return [sseEvent('content_block_start', { index, content_block: { type: 'redacted_thinking', data: block.data } }), sseEvent('content_block_stop', { index })];
    case 'tool_use':
      return [
        sseEvent('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }),
        sseEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } }),
        ...splitEvenly(JSON.stringify(block.input), 3).map((partial_json) => sseEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } })),
        sseEvent('content_block_stop', { index }),
      ];
  }
}

async function answerBlocks(ex: Exchange, behaviour: Extract<AnthropicBehaviour, { kind: 'blocks' }>): Promise<void> {
  const blocks = behaviour.blocks.map((block) => (block.type === 'tool_use' ? { ...block, id: block.id ?? toolUseId() } : block));
  const stopReason = behaviour.stopReason ?? (blocks.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn');
  const usage = behaviour.usage ?? { input_tokens: inputTokens(ex.body), output_tokens: roughTokens(JSON.stringify(blocks)) };
  if (ex.body.stream !== true) {
    if (behaviour.errorAfterBlocks !== undefined) return send(ex, 500, errorBody('api_error', errorMessages.api_error!));
    if (behaviour.chunkDelayMs) await sleep(behaviour.chunkDelayMs, undefined, { signal: ex.closed.signal }).catch(() => undefined);
    return send(ex, 200, fullMessage(ex, blocks, stopReason, usage));
  }
  openStream(ex);
  if (!(await write(ex, [messageStart(ex, usage), sseEvent('ping', {})]))) return;
  for (const [index, block] of blocks.entries()) {
    if (index === behaviour.errorAfterBlocks) {
      ex.res.end(sseEvent('error', { error: { type: 'api_error', message: 'Internal server error' } }));
      return;
    }
    if (!(await write(ex, blockFrames(index, block), behaviour.chunkDelayMs))) return;
  }
  ex.res.end(endFrames(stopReason, usage.output_tokens).join(''));
}

async function answer(ex: Exchange, behaviour: AnthropicBehaviour): Promise<void> {
  const stream = ex.body.stream === true;
  switch (behaviour.kind) {
    case 'text': {
      const text = behaviour.text ?? behaviour.chunks?.join('') ?? `Hello from ${ex.body.model}`;
      const usage = behaviour.usage ?? { input_tokens: inputTokens(ex.body), output_tokens: roughTokens(text) };
      const stopReason = behaviour.stopReason ?? 'end_turn';
      if (!stream) {
        if (behaviour.chunkDelayMs) await sleep(behaviour.chunkDelayMs, undefined, { signal: ex.closed.signal }).catch(() => undefined);
        return send(ex, 200, fullMessage(ex, [{ type: 'text', text }], stopReason, usage));
      }
      openStream(ex);
      if (!(await write(ex, [messageStart(ex, usage)]))) return;
      if (!(await write(ex, textFrames(0, behaviour.chunks ?? splitWords(text)), behaviour.chunkDelayMs))) return;
      ex.res.end(endFrames(stopReason, usage.output_tokens).join(''));
      return;
    }
    case 'tool_use': {
      const id = toolUseId();
      const json = JSON.stringify(behaviour.input);
      const usage = behaviour.usage ?? { input_tokens: inputTokens(ex.body), output_tokens: roughTokens(json) + 10 };
      const blocks: unknown[] = behaviour.text ? [{ type: 'text', text: behaviour.text }] : [];
      if (!stream) return send(ex, 200, fullMessage(ex, [...blocks, { type: 'tool_use', id, name: behaviour.name, input: behaviour.input }], 'tool_use', usage));
      const index = blocks.length;
      const frames = [
        messageStart(ex, usage),
        ...(behaviour.text ? textFrames(0, splitWords(behaviour.text)) : []),
        sseEvent('content_block_start', { index, content_block: { type: 'tool_use', id, name: behaviour.name, input: {} } }),
        // The API opens every tool input with an empty fragment (stream-tool-use.sse).
        sseEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } }),
        ...splitEvenly(json, behaviour.jsonChunks ?? 3).map((partial_json) => sseEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } })),
        sseEvent('content_block_stop', { index }),
        ...endFrames('tool_use', usage.output_tokens),
      ];
      openStream(ex);
      ex.res.end(frames.join(''));
      return;
    }
    case 'error': {
      if (behaviour.delayMs) await sleep(behaviour.delayMs, undefined, { signal: ex.closed.signal }).catch(() => undefined);
      const type = behaviour.type ?? errorTypes[behaviour.status] ?? 'api_error';
      const headers: Record<string, string> = behaviour.retryAfter !== undefined ? { 'retry-after': behaviour.retryAfter } : {};
      if (behaviour.status === 429) {
        headers['anthropic-ratelimit-requests-limit'] = '50';
        headers['anthropic-ratelimit-requests-remaining'] = '0';
        headers['anthropic-ratelimit-requests-reset'] = new Date(Date.now() + Number(behaviour.retryAfter ?? 60) * 1000).toISOString();
      }
      return send(ex, behaviour.status, errorBody(type, behaviour.message ?? errorMessages[type] ?? 'Error'), headers);
    }
    case 'overloaded_event':
      if (!stream) return send(ex, 529, errorBody('overloaded_error', 'Overloaded'));
      openStream(ex);
      ex.res.end(readFileSync(path.join(ANTHROPIC_FIXTURES_DIR, 'stream-error-overloaded.sse'), 'utf8'));
      return;
    case 'midstream_error':
    case 'midstream_drop': {
      const count = behaviour.kind === 'midstream_error' ? behaviour.chunksBeforeError : behaviour.chunksBeforeDrop;
      if (!stream) return send(ex, 500, errorBody('api_error', errorMessages.api_error!));
      const pieces = Array.from({ length: count }, (_, index) => (index === 0 ? 'Partial' : ` piece${index}`));
      const frames = [messageStart(ex, inputTokens(ex.body)), ...textFrames(0, pieces).slice(0, -1)];
      openStream(ex);
      if (behaviour.kind === 'midstream_error') {
        ex.res.end(frames.join('') + sseEvent('error', { error: { type: 'api_error', message: 'Internal server error' } }));
      } else {
        ex.res.write(frames.join(''), () => ex.req.socket.destroy());
      }
      return;
    }
    case 'blocks':
      return answerBlocks(ex, behaviour);
    case 'hang':
      return;
    case 'fixture': {
      const file = path.join(ANTHROPIC_FIXTURES_DIR, behaviour.file);
      const content = readFileSync(file, 'utf8');
      if (file.endsWith('.sse')) {
        openStream(ex);
        ex.res.end(content);
      } else {
        send(ex, 200, content);
      }
      return;
    }
  }
}

/** `countTokens` fixes what count_tokens answers; by default a rough count of the request. */
export async function startAnthropicProviderDouble(options: { apiKey: string; countTokens?: number }): Promise<AnthropicProviderDouble> {
  return startProviderDoubleServer<AnthropicBehaviour, AnthropicRecordedRequest, string>({
    basePath: '/v1',
    unscripted: { kind: 'text' },
    abandoned: (exchange) => exchange.model,
    failureBody: (error) => errorBody('api_error', `anthropic double failure: ${String(error)}`),
    async handle(exchange, double) {
      const ex: Exchange = Object.assign(exchange, { body: {} as any });
      const { json: body } = await readJsonBody(ex.req);
      ex.body = body ?? {};
      ex.model = String(ex.body.model ?? '');
      const url = ex.req.url ?? '';
      double.requests.push({ model: ex.model, body, headers: flattenHeaders(ex.req.headers), url });
      // The beta client adds `?beta=true`; the API ignores the query for routing.
      const pathname = url.split('?')[0];
      const counting = pathname === '/v1/messages/count_tokens';
      if (ex.req.method !== 'POST' || (pathname !== '/v1/messages' && !counting)) return send(ex, 404, errorBody('not_found_error', 'Not Found'));
      const invalid = validate(ex.req.headers, body, options.apiKey, counting);
      if (invalid) return send(ex, invalid.status, errorBody(invalid.type, invalid.message));
      if (counting) return send(ex, 200, JSON.stringify({ input_tokens: options.countTokens ?? inputTokens(body) }));
      await answer(ex, double.next(body.model));
    },
  });
}
