import type { InternalMessage } from '../../../shared/internal/parts.js';
import type { FunctionTool, InternalRequest, ResponseFormat, ToolChoice } from '../../../shared/internal/request.js';
import { itemsToMessages } from './responses-items.js';
import type { ResponseItem, ResponsesRequest } from './responses-schema.js';

// A Responses request (its items already resolved) as the internal request. Hosted tools
// (web_search, file_search, code_interpreter, custom...) cannot run on the targets the gateway
// translates to, so they are dropped rather than refused: Codex sends web_search by default.
// The job always streams: one event path serves streamed, non-streamed and background answers.
// A target that speaks Responses itself gets the client's own fields and items (extras).

type Json = Record<string, unknown>;

function functionTools(request: ResponsesRequest): FunctionTool[] {
  return (request.tools ?? []).flatMap((tool): FunctionTool[] => {
    const raw = tool as Json;
    if (tool.type !== 'function' || typeof raw.name !== 'string') return [];
    const entry: FunctionTool = { type: 'function', name: raw.name, inputSchema: (raw.parameters as Json | null | undefined) ?? { type: 'object', properties: {} } };
    if (typeof raw.description === 'string') entry.description = raw.description;
    if (typeof raw.strict === 'boolean') entry.strict = raw.strict;
    return [entry];
  });
}

function toolChoice(choice: ResponsesRequest['tool_choice'], tools: FunctionTool[]): ToolChoice | undefined {
  if (choice === undefined) return undefined;
  if (typeof choice === 'string') return { type: choice };
  if (choice.type === 'function' && choice.name && tools.some((tool) => tool.name === choice.name)) return { type: 'tool', name: choice.name };
  if (choice.type === 'allowed_tools') return { type: (choice as Json).mode === 'required' ? 'required' : 'auto' };
  // A hosted tool that was dropped: let the model choose among the rest.
  return { type: 'auto' };
}

function responseFormat(request: ResponsesRequest): ResponseFormat | undefined {
  const format = request.text?.format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  const result: ResponseFormat = { type: 'json_schema', name: format.name ?? 'response' };
  if (format.schema !== undefined) result.schema = format.schema;
  if (format.strict != null) result.strict = format.strict;
  if (format.description !== undefined) result.description = format.description;
  return result;
}

/** Fields the gateway handles itself; every other field reaches a Responses-speaking target as sent. */
const handledHere = new Set(['model', 'input', 'fallbacks', 'stream', 'stream_options', 'store', 'background', 'previous_response_id', 'max_output_tokens', 'temperature', 'top_p']);

/** Ids the gateway gave its own items mean nothing to the provider (which stores nothing). */
const gatewayItemId = /^(?:msg|fc|rs)_[0-9a-f]{32}_\w+$/;

/** The request as a Responses-speaking target should get it: the client's fields, the conversation's items. */
function nativeFields(request: ResponsesRequest, items: ResponseItem[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(request)) if (!handledHere.has(key) && value !== undefined && value !== null) fields[key] = value;
  fields.input = items.map((item) => {
    if (typeof item.id !== 'string' || !gatewayItemId.test(item.id)) return item;
    const { id: _id, ...rest } = item;
    return rest;
  });
  return fields;
}

export function responsesToInternal(request: ResponsesRequest, items: ResponseItem[]): InternalRequest {
  const messages: InternalMessage[] = itemsToMessages(items);
  // instructions apply to this request only (not inherited through previous_response_id).
  if (request.instructions) messages.unshift({ role: 'system', content: [{ type: 'text', text: request.instructions }], plainText: true });
  const internal: InternalRequest = { source: 'openai', model: request.model, messages, n: 1, stream: true, includeUsage: true };
  if (request.fallbacks) internal.fallbacks = request.fallbacks;
  if (request.max_output_tokens != null) internal.maxOutputTokens = request.max_output_tokens;
  if (request.temperature != null) internal.temperature = request.temperature;
  if (request.top_p != null) internal.topP = request.top_p;
  if (request.user) internal.user = request.user;
  if (request.reasoning?.effort) internal.reasoning = { effort: request.reasoning.effort };
  const tools = functionTools(request);
  if (tools.length > 0) {
    internal.tools = tools;
    const choice = toolChoice(request.tool_choice, tools);
    if (choice) internal.toolChoice = choice;
    if (request.parallel_tool_calls != null) internal.parallelToolCalls = request.parallel_tool_calls;
  } else if (request.tool_choice === 'none') internal.toolChoice = { type: 'none' };
  const format = responseFormat(request);
  if (format) internal.responseFormat = format;
  internal.extras = { 'openai-responses': nativeFields(request, items) };
  return internal;
}
