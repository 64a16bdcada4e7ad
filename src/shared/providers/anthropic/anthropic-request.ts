import { GatewayError } from '../../errors.js';
import { toolArgumentsObject } from '../../internal/tool-arguments.js';
import type { ContentPart, InternalMessage, MediaSource } from '../../internal/parts.js';
import { textOfParts } from '../../internal/parts.js';
import type { InternalRequest } from '../../internal/request.js';
import { dataUrlPattern } from '../../internal/media.js';
import { outputCeiling, type AdapterContext, type ProviderHttpRequest } from '../chat-adapter.js';

// Internal request -> Anthropic Messages request. A request that came from an Anthropic client
// goes back as it was sent: its blocks, cache_control, thinking signatures, tool ids and every
// field the internal format does not model (extras.anthropic). Others are translated: system
// instructions hoisted, same-role turns merged, tool results leading their user turn.

export const anthropicVersion = '2023-06-01';
/** Anthropic requires max_tokens; used when neither the request nor the catalog gives one. */
export const defaultAnthropicMaxTokens = 4096;

type Block = Record<string, unknown> & { type: string };
interface AnthropicMessage {
  role: string;
  content: Block[] | string;
}

function withCache(block: Block, part: { cache?: Record<string, unknown>; extras?: { anthropic?: Record<string, unknown> } }): Block {
  const result: Block = { ...block, ...part.extras?.anthropic };
  if (part.cache) result.cache_control = part.cache;
  return result;
}

function source(media: MediaSource, param: string, sameWire: boolean): Record<string, unknown> {
  switch (media.kind) {
    case 'base64':
      return { type: 'base64', media_type: media.mediaType, data: media.data };
    case 'text':
      return { type: 'text', media_type: media.mediaType, data: media.data };
    case 'file_id':
      if (!sameWire) throw new GatewayError('invalid_value', `Invalid value for '${param}': Anthropic models do not accept file ids from another API; send the file's data.`, { param });
      return { type: 'file', file_id: media.id };
    case 'url': {
      const data = dataUrlPattern.exec(media.url);
      if (data) return { type: 'base64', media_type: data[1], data: data[2] };
      if (/^https?:\/\//i.test(media.url)) return { type: 'url', url: media.url };
      throw new GatewayError('invalid_value', `Invalid value for '${param}': Anthropic models take images as base64 data: URLs or http(s) URLs.`, { param });
    }
  }
}

/** One part as a block, or nothing when Anthropic has no counterpart (another format's opaque block). */
function block(part: ContentPart, param: string, sameWire: boolean): Block | undefined {
  switch (part.type) {
    case 'text':
      // Anthropic rejects empty text blocks.
      return part.text === '' && !sameWire ? undefined : withCache({ type: 'text', text: part.text }, part);
    case 'image':
      return withCache({ type: 'image', source: source(part.source, param, sameWire) }, part);
    case 'file':
      return withCache({ type: 'document', source: source(part.source, param, sameWire) }, part);
    case 'tool_call':
      return withCache({ type: 'tool_use', id: part.id, name: part.name, input: toolArgumentsObject(part.arguments) }, part);
    case 'tool_result': {
      const result: Block = { type: 'tool_result', tool_use_id: part.toolCallId };
      if (typeof part.content === 'string') result.content = part.content;
      else if (part.content.length > 0) result.content = part.content.flatMap((inner) => block(inner, param, sameWire) ?? []);
      if (part.isError !== undefined) result.is_error = part.isError;
      return withCache(result, part);
    }
    case 'reasoning':
      // Thinking without a signature (from another provider) cannot be verified by Anthropic.
      return part.signature === undefined ? undefined : withCache({ type: 'thinking', thinking: part.text, signature: part.signature }, part);
    case 'redacted_reasoning':
      return withCache({ type: 'redacted_thinking', data: part.data }, part);
    case 'opaque':
      return part.wire === 'anthropic' ? (part.value as Block) : undefined;
    case 'audio':
      throw new GatewayError('invalid_value', `Invalid value for '${param}': Anthropic models do not accept 'input_audio' content parts in this form.`, { param });
    case 'refusal':
      return undefined;
  }
}

function blocks(message: InternalMessage, index: number, sameWire: boolean): Block[] {
  return message.content.flatMap((part, position) => block(part, `messages[${index}].content[${position}]`, sameWire) ?? []);
}

/** Anthropic wants strictly alternating roles, so same-role neighbours are merged into one turn. */
function appendTurn(messages: AnthropicMessage[], role: 'user' | 'assistant', content: Block[]): void {
  if (content.length === 0) return;
  const last = messages.at(-1);
  if (!last || last.role !== role || typeof last.content === 'string') {
    messages.push({ role, content });
    return;
  }
  const merged = [...last.content, ...content];
  // tool_result blocks must lead a user turn; a stable partition keeps everything else in order.
  last.content = role === 'user' ? [...merged.filter((b) => b.type === 'tool_result'), ...merged.filter((b) => b.type !== 'tool_result')] : merged;
}

function systemBlocks(message: InternalMessage): Block[] {
  const texts = message.content.filter((part) => part.type === 'text');
  // A message's text is one block unless its parts carry cache breakpoints of their own.
  if (texts.every((part) => !part.cache && !part.extras?.anthropic)) {
    const text = textOfParts(texts);
    return text === '' ? [] : [{ type: 'text', text }];
  }
  return texts.flatMap((part) => (part.text !== '' ? [withCache({ type: 'text', text: part.text }, part)] : []));
}

/** An Anthropic client's conversation, message for message. */
function sameWireMessages(request: InternalRequest): { system?: Block[] | string; messages: AnthropicMessage[] } {
  let system: Block[] | string | undefined;
  const messages: AnthropicMessage[] = [];
  request.messages.forEach((message, index) => {
    if (message.role === 'system' && message.extras?.anthropic?.inline !== true) {
      system = message.plainText ? textOfParts(message.content) : blocks(message, index, true);
      return;
    }
    const { inline: _inline, ...extras } = message.extras?.anthropic ?? {};
    const role = message.role === 'tool' ? 'user' : message.role;
    messages.push({ ...extras, role, content: message.plainText ? textOfParts(message.content) : blocks(message, index, true) });
  });
  return system === undefined ? { messages } : { system, messages };
}

export function toAnthropicMessages(request: InternalRequest): { system?: Block[] | string; messages: AnthropicMessage[] } {
  if (request.source === 'anthropic') return sameWireMessages(request);
  const system: Block[] = [];
  const messages: AnthropicMessage[] = [];
  request.messages.forEach((message, index) => {
    // Anthropic has no system role inside the conversation; every instruction is hoisted to the top.
    if (message.role === 'system') system.push(...systemBlocks(message));
    else appendTurn(messages, message.role === 'assistant' ? 'assistant' : 'user', blocks(message, index, false));
  });
  return system.length > 0 ? { system, messages } : { messages };
}

function translatedFields(request: InternalRequest, body: Record<string, unknown>): void {
  if (request.stop !== undefined) body.stop_sequences = request.stop;
  if (request.topK !== undefined) body.top_k = request.topK;
  const functionTools = (request.tools ?? []).length > 0;
  const choice = request.toolChoice;
  let mapped: Record<string, unknown> | undefined;
  if (choice?.type === 'none') mapped = { type: 'none' };
  else if (choice?.type === 'auto') mapped = { type: 'auto' };
  else if (choice?.type === 'required') mapped = { type: 'any' };
  else if (choice?.type === 'tool') mapped = { type: 'tool', name: choice.name };
  if (request.parallelToolCalls === false && mapped?.type !== 'none') mapped = { ...(mapped ?? { type: 'auto' }), disable_parallel_tool_use: true };
  if (mapped && functionTools) body.tool_choice = mapped;
  if (request.user) body.metadata = { user_id: request.user };
  const reasoning = request.reasoning;
  if (reasoning?.mode === 'enabled' && reasoning.budgetTokens !== undefined) body.thinking = { type: 'enabled', budget_tokens: reasoning.budgetTokens };
}

export function buildAnthropicBody(request: InternalRequest, context: AdapterContext): Record<string, unknown> {
  const sameWire = request.source === 'anthropic';
  const body: Record<string, unknown> = sameWire ? { ...request.extras?.anthropic } : {};
  body.model = context.upstreamModel;
  body.max_tokens = outputCeiling(request, context, sameWire) ?? context.maxOutputTokens ?? defaultAnthropicMaxTokens;
  Object.assign(body, toAnthropicMessages(request));
  // The internal scale is OpenAI's 0..2, Anthropic's 0..1: halving keeps both ends meaning the same.
  if (request.temperature !== undefined) body.temperature = request.temperature / 2;
  if (request.topP !== undefined) body.top_p = request.topP;
  const tools = (request.tools ?? []).flatMap((tool): Block[] => {
    if (tool.type === 'opaque') return tool.wire === 'anthropic' ? [tool.value as Block] : [];
    const entry: Record<string, unknown> = { name: tool.name };
    if (tool.description !== undefined) entry.description = tool.description;
    // input_schema is mandatory and must describe an object, even for a tool without arguments.
    entry.input_schema = tool.inputSchema;
    return [withCache(entry as Block, tool)];
  });
  if (tools.length > 0) body.tools = tools;
  if (!sameWire) translatedFields(request, body);
  if (context.stream) body.stream = true;
  else delete body.stream;
  return body;
}

export function buildAnthropicRequest(request: InternalRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': anthropicVersion };
  if (request.source === 'anthropic' && request.wireHeaders) Object.assign(headers, request.wireHeaders);
  Object.assign(headers, context.provider.headers);
  if (context.provider.apiKey) headers['x-api-key'] = context.provider.apiKey;
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/messages`, method: 'POST', headers, body: JSON.stringify(buildAnthropicBody(request, context)) };
}
