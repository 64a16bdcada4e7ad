import type { ContentPart, InternalMessage } from '../../internal/parts.js';
import { textOfParts } from '../../internal/parts.js';
import type { InternalRequest } from '../../internal/request.js';
import type { AdapterContext } from '../provider-adapter.js';
import { dataUrl } from '../openai/openai-request.js';

// Internal request -> OpenAI Responses body (POST /v1/responses), for providers that speak the
// Responses API themselves. A request that came from a Responses client carries its own items and
// fields (hosted tools, include, encrypted reasoning...) in extras['openai-responses'] and gets
// them back as sent; a request from another API is translated from the internal messages. The
// gateway keeps its own stored responses, so the provider is always asked not to store.

type Json = Record<string, unknown>;

function inputPart(part: ContentPart): Json | undefined {
  switch (part.type) {
    case 'text':
      return { type: 'input_text', text: part.text };
    case 'image':
      if (part.source.kind === 'file_id') return { type: 'input_image', file_id: part.source.id, detail: part.detail ?? 'auto' };
      return { type: 'input_image', image_url: part.source.kind === 'url' ? part.source.url : dataUrl(part.source), detail: part.detail ?? 'auto' };
    case 'file': {
      const name = part.filename !== undefined ? { filename: part.filename } : {};
      if (part.source.kind === 'file_id') return { type: 'input_file', file_id: part.source.id, ...name };
      if (part.source.kind === 'url') return { type: 'input_file', file_url: part.source.url, ...name };
      return { type: 'input_file', file_data: dataUrl(part.source), ...name };
    }
    default:
      return undefined;
  }
}

function appendItems(items: Json[], message: InternalMessage): void {
  if (message.role === 'system') {
    const text = textOfParts(message.content);
    if (text) items.push({ role: 'system', content: text });
    return;
  }
  if (message.role === 'assistant') {
    let text = '';
    const flush = () => {
      if (text) items.push({ role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
      text = '';
    };
    for (const part of message.content) {
      if (part.type === 'text') text += part.text;
      else if (part.type === 'tool_call') {
        flush();
        items.push({ type: 'function_call', call_id: part.id, name: part.name, arguments: part.arguments });
      }
    }
    flush();
    return;
  }
  const rest: Json[] = [];
  for (const part of message.content) {
    if (part.type === 'tool_result') {
      const output = typeof part.content === 'string' ? part.content : textOfParts(part.content);
      items.push({ type: 'function_call_output', call_id: part.toolCallId, output });
    } else {
      const converted = inputPart(part);
      if (converted) rest.push(converted);
    }
  }
  if (message.role === 'user' && rest.length > 0) items.push({ role: 'user', content: message.plainText && rest.every((part) => part.type === 'input_text') ? textOfParts(message.content) : rest });
}

function translated(request: InternalRequest): Json {
  const input: Json[] = [];
  for (const message of request.messages) appendItems(input, message);
  const body: Json = { input };
  const tools = (request.tools ?? []).flatMap((tool): Json[] => {
    if (tool.type === 'opaque') return [];
    const entry: Json = { type: 'function', name: tool.name, parameters: tool.inputSchema, strict: tool.strict ?? false };
    if (tool.description !== undefined) entry.description = tool.description;
    return [entry];
  });
  if (tools.length > 0) {
    body.tools = tools;
    const choice = request.toolChoice;
    if (choice) body.tool_choice = choice.type === 'tool' ? { type: 'function', name: choice.name } : choice.type;
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  }
  const format = request.responseFormat;
  if (format) body.text = { format: format.type === 'json_schema' ? { ...format, strict: format.strict ?? false } : { type: format.type } };
  if (request.reasoning?.effort !== undefined) body.reasoning = { effort: request.reasoning.effort };
  if (request.user !== undefined) body.user = request.user;
  return body;
}

export function buildResponsesBody(request: InternalRequest, context: AdapterContext): string {
  const own = request.source === 'openai' ? request.extras?.['openai-responses'] : undefined;
  const body: Json = own ? { ...own } : translated(request);
  body.model = context.upstreamModel;
  body.store = false;
  if (request.maxOutputTokens !== undefined) body.max_output_tokens = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (context.stream) body.stream = true;
  else delete body.stream;
  return JSON.stringify(body);
}
