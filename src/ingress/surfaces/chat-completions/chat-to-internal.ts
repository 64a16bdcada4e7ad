import type { ChatMessage, ChatRequest } from './chat-request-schema.js';
import { mediaFromUrl, dataUrlPattern } from '../../../shared/internal/media.js';
import type { ContentPart, InternalMessage, TextPart } from '../../../shared/internal/parts.js';
import type { InternalRequest, InternalTool, ResponseFormat, ToolChoice } from '../../../shared/internal/request.js';

// A validated Chat Completions request as the internal request. Fields the internal format does
// not model stay in extras.openai, so an OpenAI-format target gets them back unchanged.

type Json = Record<string, unknown>;

/** The keys of a part or message beyond the ones named; undefined when there are none. */
function rest(value: Json, known: readonly string[]): { openai: Json } | undefined {
  let extra: Json | undefined;
  for (const [key, entry] of Object.entries(value)) {
    if (known.includes(key)) continue;
    (extra ??= {})[key] = entry;
  }
  return extra ? { openai: extra } : undefined;
}

function withExtras<T extends object>(part: T, extras: { openai: Json } | undefined): T {
  return extras ? { ...part, extras } : part;
}

function contentPart(raw: Json): ContentPart {
  switch (raw.type) {
    case 'text':
      return withExtras<TextPart>({ type: 'text', text: String(raw.text) }, rest(raw, ['type', 'text']));
    case 'image_url': {
      const image = raw.image_url as { url: string; detail?: string };
      const part: ContentPart = { type: 'image', source: mediaFromUrl(image.url) };
      if (image.detail !== undefined) part.detail = image.detail;
      return withExtras(part, rest(raw, ['type', 'image_url']));
    }
    case 'input_audio': {
      const audio = raw.input_audio as { data?: unknown; format?: unknown } | undefined;
      if (typeof audio?.data === 'string' && typeof audio.format === 'string') return { type: 'audio', data: audio.data, format: audio.format };
      break;
    }
    case 'file': {
      const file = raw.file as { file_data?: unknown; file_id?: unknown; filename?: unknown } | undefined;
      const data = typeof file?.file_data === 'string' ? dataUrlPattern.exec(file.file_data) : null;
      const filename = typeof file?.filename === 'string' ? { filename: file.filename } : {};
      if (data) return { type: 'file', source: { kind: 'base64', mediaType: data[1]!, data: data[2]! }, ...filename };
      if (typeof file?.file_id === 'string') return { type: 'file', source: { kind: 'file_id', id: file.file_id }, ...filename };
      break;
    }
    case 'refusal':
      return { type: 'refusal', text: String(raw.refusal ?? '') };
  }
  // A part only an OpenAI-format target can read.
  return { type: 'opaque', wire: 'openai', value: raw };
}

function messageParts(content: ChatMessage['content']): { content: ContentPart[]; plainText?: boolean } {
  if (typeof content === 'string') return { content: content === '' ? [] : [{ type: 'text', text: content }], plainText: true };
  if (!Array.isArray(content)) return { content: [] };
  return { content: content.map((part) => contentPart(part as Json)) };
}

function toMessage(message: ChatMessage): InternalMessage {
  const raw = message as unknown as Json;
  switch (message.role) {
    case 'system':
    case 'developer': {
      const extras = rest(raw, ['role', 'content']);
      return withExtras<InternalMessage>({ role: 'system', ...messageParts(message.content) }, extras);
    }
    case 'user':
      return withExtras<InternalMessage>({ role: 'user', ...messageParts(message.content) }, rest(raw, ['role', 'content']));
    case 'assistant': {
      const parts = messageParts(message.content ?? null);
      for (const call of message.tool_calls ?? []) parts.content.push({ type: 'tool_call', id: call.id, name: call.function.name, arguments: call.function.arguments });
      if (typeof message.refusal === 'string') parts.content.push({ type: 'refusal', text: message.refusal });
      return withExtras<InternalMessage>({ role: 'assistant', ...parts }, rest(raw, ['role', 'content', 'tool_calls', 'refusal']));
    }
    case 'tool': {
      const content = typeof message.content === 'string' ? message.content : message.content.map((part) => contentPart(part as Json) as TextPart);
      return withExtras<InternalMessage>({ role: 'tool', content: [{ type: 'tool_result', toolCallId: message.tool_call_id, content }] }, rest(raw, ['role', 'content', 'tool_call_id']));
    }
  }
}

function toolChoice(choice: ChatRequest['tool_choice']): ToolChoice | undefined {
  if (choice === undefined) return undefined;
  return typeof choice === 'string' ? { type: choice } : { type: 'tool', name: choice.function.name };
}

function responseFormat(format: ChatRequest['response_format']): ResponseFormat | undefined {
  if (!format) return undefined;
  if (format.type !== 'json_schema') return { type: format.type };
  const schema = format.json_schema as { name: string; schema?: Json; strict?: boolean; description?: string };
  const result: ResponseFormat = { type: 'json_schema', name: schema.name };
  if (schema.schema !== undefined) result.schema = schema.schema;
  if (schema.strict !== undefined && schema.strict !== null) result.strict = schema.strict;
  if (schema.description !== undefined) result.description = schema.description;
  return result;
}

/** Fields the internal request models; everything else rides in extras.openai. Some stay there too, as markers of the client's spelling. */
const modelled = new Set(['model', 'messages', 'fallbacks', 'stream', 'stream_options', 'temperature', 'top_p', 'seed', 'presence_penalty', 'frequency_penalty', 'tools', 'tool_choice', 'parallel_tool_calls', 'user', 'response_format', 'reasoning_effort']);

export function chatToInternal(request: ChatRequest): InternalRequest {
  const internal: InternalRequest = {
    source: 'openai',
    model: request.model,
    messages: request.messages.map(toMessage),
    n: request.n ?? 1,
    stream: request.stream === true,
  };
  if (request.fallbacks) internal.fallbacks = request.fallbacks;
  if (request.stream_options?.include_usage) internal.includeUsage = true;
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (maxTokens != null) internal.maxOutputTokens = maxTokens;
  if (request.temperature != null) internal.temperature = request.temperature;
  if (request.top_p != null) internal.topP = request.top_p;
  if (request.stop != null) internal.stop = typeof request.stop === 'string' ? [request.stop] : request.stop;
  if (request.seed != null) internal.seed = request.seed;
  if (request.presence_penalty != null) internal.presencePenalty = request.presence_penalty;
  if (request.frequency_penalty != null) internal.frequencyPenalty = request.frequency_penalty;
  if (request.user !== undefined) internal.user = request.user;
  if (request.reasoning_effort != null) internal.reasoning = { effort: request.reasoning_effort };
  const tools: InternalTool[] | undefined = request.tools?.map((tool) => {
    const entry: InternalTool = { type: 'function', name: tool.function.name, inputSchema: tool.function.parameters ?? { type: 'object', properties: {} } };
    if (tool.function.description !== undefined) entry.description = tool.function.description;
    if (tool.function.strict != null) entry.strict = tool.function.strict;
    return entry;
  });
  if (tools) internal.tools = tools;
  const choice = toolChoice(request.tool_choice);
  if (choice) internal.toolChoice = choice;
  if (request.parallel_tool_calls !== undefined) internal.parallelToolCalls = request.parallel_tool_calls;
  const format = responseFormat(request.response_format);
  if (format) internal.responseFormat = format;
  const extras: Json = {};
  for (const [key, value] of Object.entries(request)) if (!modelled.has(key) && value !== undefined) extras[key] = value;
  if (Object.keys(extras).length > 0) internal.extras = { openai: extras };
  return internal;
}
