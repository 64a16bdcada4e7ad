import { GatewayError } from '../../../shared/errors.js';
import type { ContentPart, InternalMessage, MediaSource, ToolResultContent, WireExtras } from '../../../shared/internal/parts.js';
import type { InternalRequest, InternalTool, ToolChoice } from '../../../shared/internal/request.js';
import type { SurfaceHeaders } from '../../pipeline/surface.js';
import type { MessagesBlock, MessagesRequest } from './messages-schema.js';

// An Anthropic Messages request as the internal request. Every block keeps what the internal
// format does not model (citations, titles, unknown fields) in extras.anthropic, and blocks with no
// internal counterpart stay whole as opaque parts, so an Anthropic target receives the request as
// the client sent it.

type Json = Record<string, unknown>;

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_value', `${param}: ${message}`, { param });
}

/** Splits a block into the fields named and the rest (kept for Anthropic targets). */
function split(value: Json, known: readonly string[]): { cache?: Json; extras?: WireExtras } {
  const result: { cache?: Json; extras?: WireExtras } = {};
  let other: Json | undefined;
  for (const [key, entry] of Object.entries(value)) {
    if (key === 'type' || known.includes(key)) continue;
    if (key === 'cache_control' && entry && typeof entry === 'object') result.cache = entry as Json;
    else (other ??= {})[key] = entry;
  }
  if (other) result.extras = { anthropic: other };
  return result;
}

function mediaSource(raw: unknown, param: string): MediaSource | undefined {
  if (!raw || typeof raw !== 'object') throw invalid(`${param}.source`, 'Field required');
  const source = raw as Json;
  if (source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string') return { kind: 'base64', mediaType: source.media_type, data: source.data };
  if (source.type === 'text' && typeof source.media_type === 'string' && typeof source.data === 'string') return { kind: 'text', mediaType: source.media_type, data: source.data };
  if (source.type === 'url' && typeof source.url === 'string') return { kind: 'url', url: source.url };
  if (source.type === 'file' && typeof source.file_id === 'string') return { kind: 'file_id', id: source.file_id };
  // Other sources (a document's inline content blocks) only Anthropic reads: the block stays whole.
  return undefined;
}

function textField(block: Json, field: string, param: string): string {
  const value = block[field];
  if (typeof value !== 'string') throw invalid(`${param}.${field}`, 'Field required');
  return value;
}

export function blockToPart(raw: MessagesBlock, param: string): ContentPart {
  const block = raw as Json;
  switch (raw.type) {
    case 'text':
      return { type: 'text', text: textField(block, 'text', param), ...split(block, ['text']) };
    case 'image': {
      const source = mediaSource(block.source, param);
      return source ? { type: 'image', source, ...split(block, ['source']) } : { type: 'opaque', wire: 'anthropic', value: block };
    }
    case 'document': {
      const source = mediaSource(block.source, param);
      return source ? { type: 'file', source, ...split(block, ['source']) } : { type: 'opaque', wire: 'anthropic', value: block };
    }
    case 'tool_use': {
      const input = block.input;
      if (!input || typeof input !== 'object' || Array.isArray(input)) throw invalid(`${param}.input`, 'Input should be a valid dictionary');
      return { type: 'tool_call', id: textField(block, 'id', param), name: textField(block, 'name', param), arguments: JSON.stringify(input), ...split(block, ['id', 'name', 'input']) };
    }
    case 'tool_result': {
      const toolCallId = textField(block, 'tool_use_id', param);
      const inner = block.content;
      // No content at all is kept as an empty list, which goes back to Anthropic as no content.
      let content: string | ToolResultContent = [];
      if (typeof inner === 'string') content = inner;
      else if (Array.isArray(inner)) {
        content = inner.map((entry, position) => {
          const part = blockToPart(entry as MessagesBlock, `${param}.content.${position}`);
          return part.type === 'text' || part.type === 'image' || part.type === 'file' || part.type === 'opaque' ? part : { type: 'opaque', wire: 'anthropic', value: entry as Json };
        });
      } else if (inner !== undefined) throw invalid(`${param}.content`, 'Input should be a valid string or list');
      const part: ContentPart = { type: 'tool_result', toolCallId, content, ...split(block, ['tool_use_id', 'content', 'is_error']) };
      if (typeof block.is_error === 'boolean') part.isError = block.is_error;
      return part;
    }
    case 'thinking': {
      const part: ContentPart = { type: 'reasoning', text: textField(block, 'thinking', param), ...split(block, ['thinking', 'signature']) };
      if (typeof block.signature === 'string') part.signature = block.signature;
      return part;
    }
    case 'redacted_thinking':
      return { type: 'redacted_reasoning', data: textField(block, 'data', param), ...split(block, ['data']) };
    default:
      return { type: 'opaque', wire: 'anthropic', value: block };
  }
}

function contentParts(content: string | MessagesBlock[], param: string): { content: ContentPart[]; plainText?: boolean } {
  if (typeof content === 'string') return { content: [{ type: 'text', text: content }], plainText: true };
  return { content: content.map((entry, position) => blockToPart(entry, `${param}.${position}`)) };
}

function toMessages(request: MessagesRequest): InternalMessage[] {
  const messages: InternalMessage[] = [];
  if (request.system !== undefined) messages.push({ role: 'system', ...contentParts(request.system, 'system') });
  request.messages.forEach((entry, index) => {
    const { role, content, ...other } = entry;
    const message: InternalMessage = { role, ...contentParts(content, `messages.${index}.content`) };
    // A system entry among the messages (Claude Code sends them) stays where it was for Anthropic targets.
    const extras: Json = role === 'system' ? { ...other, inline: true } : other;
    if (Object.keys(extras).length > 0) message.extras = { anthropic: extras };
    messages.push(message);
  });
  return messages;
}

function toTools(request: MessagesRequest): InternalTool[] | undefined {
  return request.tools?.map((raw): InternalTool => {
    const tool = raw as Json;
    // Server tools (web search, code execution, bash...) run at Anthropic; only Anthropic targets get them.
    if (tool.type !== undefined && tool.type !== 'custom') return { type: 'opaque', wire: 'anthropic', value: tool };
    const entry: InternalTool = { type: 'function', name: String(tool.name), inputSchema: tool.input_schema as Json, ...split(tool, ['name', 'description', 'input_schema']) };
    if (typeof tool.description === 'string') entry.description = tool.description;
    return entry;
  });
}

function toolChoice(choice: MessagesRequest['tool_choice']): ToolChoice | undefined {
  if (!choice) return undefined;
  if (choice.type === 'tool') {
    if (!choice.name) throw invalid('tool_choice.name', 'Field required');
    return { type: 'tool', name: choice.name };
  }
  return { type: choice.type === 'any' ? 'required' : choice.type };
}

/** Request fields the internal request models and that are therefore not kept in extras. */
const rebuilt = new Set(['model', 'max_tokens', 'messages', 'system', 'stream', 'temperature', 'top_p', 'tools', 'fallbacks']);

export function messagesToInternal(request: MessagesRequest, headers: SurfaceHeaders): InternalRequest {
  const internal: InternalRequest = {
    source: 'anthropic',
    model: request.model,
    messages: toMessages(request),
    maxOutputTokens: request.max_tokens,
    n: 1,
    stream: request.stream === true,
    // Usage always ends an Anthropic stream.
    includeUsage: true,
  };
  if (request.fallbacks) internal.fallbacks = request.fallbacks;
  // The internal scale is OpenAI's 0..2.
  if (request.temperature !== undefined) internal.temperature = request.temperature * 2;
  if (request.top_p !== undefined) internal.topP = request.top_p;
  if (request.top_k !== undefined) internal.topK = request.top_k;
  if (request.stop_sequences !== undefined) internal.stop = request.stop_sequences;
  const tools = toTools(request);
  if (tools) internal.tools = tools;
  const choice = toolChoice(request.tool_choice);
  if (choice) internal.toolChoice = choice;
  if (request.tool_choice?.disable_parallel_tool_use !== undefined) internal.parallelToolCalls = !request.tool_choice.disable_parallel_tool_use;
  if (typeof request.metadata?.user_id === 'string') internal.user = request.metadata.user_id;
  if (request.thinking) {
    internal.reasoning = { mode: request.thinking.type };
    if (request.thinking.budget_tokens !== undefined) internal.reasoning.budgetTokens = request.thinking.budget_tokens;
  }
  const extras: Json = {};
  for (const [key, value] of Object.entries(request)) if (!rebuilt.has(key) && value !== undefined) extras[key] = value;
  if (Object.keys(extras).length > 0) internal.extras = { anthropic: extras };
  const wireHeaders: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta']) if (headers[name]) wireHeaders[name] = headers[name]!;
  if (Object.keys(wireHeaders).length > 0) internal.wireHeaders = wireHeaders;
  return internal;
}
