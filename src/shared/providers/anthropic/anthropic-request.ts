import type { ChatMessage, ChatRequest } from '../../chat-request-schema.js';
import { GatewayError } from '../../errors.js';
import type { AdapterContext, ProviderHttpRequest } from '../provider-adapter.js';

// OpenAI Chat Completions request -> Anthropic Messages request.

export const anthropicVersion = '2023-06-01';
/** Anthropic requires max_tokens; used when neither the request nor the catalog gives one. */
export const defaultAnthropicMaxTokens = 4096;

type Block = Record<string, unknown> & { type: string };
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

function textOf(content: string | Array<Record<string, unknown>> | null | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

const dataUrlPattern = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

function mediaSource(url: string, param: string): Record<string, unknown> {
  const data = dataUrlPattern.exec(url);
  if (data) return { type: 'base64', media_type: data[1], data: data[2] };
  if (/^https?:\/\//i.test(url)) return { type: 'url', url };
  throw new GatewayError('invalid_value', `Invalid value for '${param}': Anthropic models take images as base64 data: URLs or http(s) URLs.`, { param });
}

function userBlocks(content: Extract<ChatMessage, { role: 'user' }>['content'], param: string): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return content.flatMap((part, position): Block[] => {
    const where = `${param}[${position}]`;
    if (part.type === 'text') return typeof part.text === 'string' && part.text !== '' ? [{ type: 'text', text: part.text }] : [];
    if (part.type === 'image_url') {
      const image = part.image_url as { url: string };
      return [{ type: 'image', source: mediaSource(image.url, where) }];
    }
    if (part.type === 'file') {
      // PDFs travel as document blocks; only inline file_data can be translated, not OpenAI file ids.
      const file = part.file as { file_data?: string } | undefined;
      const data = file?.file_data ? dataUrlPattern.exec(file.file_data) : null;
      if (data) return [{ type: 'document', source: { type: 'base64', media_type: data[1], data: data[2] } }];
    }
    throw new GatewayError('invalid_value', `Invalid value for '${where}': Anthropic models do not accept '${part.type}' content parts in this form.`, { param: where });
  });
}

function toolUseInput(argumentsText: string): unknown {
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    // Anthropic insists on an object; a model that emitted broken JSON earlier must not break the replay.
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

function assistantBlocks(message: Extract<ChatMessage, { role: 'assistant' }>): Block[] {
  const blocks: Block[] = [];
  // Anthropic rejects empty text blocks, so an empty assistant text is dropped rather than sent.
  const text = textOf(message.content);
  if (text !== '') blocks.push({ type: 'text', text });
  for (const call of message.tool_calls ?? []) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolUseInput(call.function.arguments) });
  }
  return blocks;
}

/** Anthropic wants strictly alternating roles, so same-role neighbours are merged into one turn. */
function appendTurn(messages: AnthropicMessage[], role: 'user' | 'assistant', blocks: Block[]): void {
  if (blocks.length === 0) return;
  const last = messages.at(-1);
  if (!last || last.role !== role) {
    messages.push({ role, content: blocks });
    return;
  }
  last.content.push(...blocks);
  // tool_result blocks must lead a user turn; a stable partition keeps everything else in order.
  if (role === 'user') last.content = [...last.content.filter((b) => b.type === 'tool_result'), ...last.content.filter((b) => b.type !== 'tool_result')];
}

export function toAnthropicMessages(messages: ChatMessage[]): { system: Block[]; messages: AnthropicMessage[] } {
  const system: Block[] = [];
  const result: AnthropicMessage[] = [];
  messages.forEach((message, index) => {
    const param = `messages[${index}].content`;
    switch (message.role) {
      case 'system':
      case 'developer': {
        // Anthropic has no system role inside the conversation; every instruction is hoisted to the top.
        const text = textOf(message.content);
        if (text !== '') system.push({ type: 'text', text });
        break;
      }
      case 'user':
        appendTurn(result, 'user', userBlocks(message.content, param));
        break;
      case 'assistant':
        appendTurn(result, 'assistant', assistantBlocks(message));
        break;
      case 'tool':
        appendTurn(result, 'user', [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: textOf(message.content) }]);
        break;
    }
  });
  return { system, messages: result };
}

function toolChoice(request: ChatRequest): Record<string, unknown> | undefined {
  const choice = request.tool_choice;
  let mapped: Record<string, unknown> | undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') mapped = { type: 'auto' };
  else if (choice === 'required') mapped = { type: 'any' };
  else if (choice && typeof choice === 'object') mapped = { type: 'tool', name: choice.function.name };
  if (request.parallel_tool_calls === false) mapped = { ...(mapped ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return mapped;
}

export function buildAnthropicBody(request: ChatRequest, context: AdapterContext): Record<string, unknown> {
  const { system, messages } = toAnthropicMessages(request.messages);
  const body: Record<string, unknown> = {
    model: context.upstreamModel,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? context.maxOutputTokens ?? defaultAnthropicMaxTokens,
    messages,
  };
  if (system.length > 0) body.system = system;
  if (request.stop != null) body.stop_sequences = typeof request.stop === 'string' ? [request.stop] : request.stop;
  // OpenAI's temperature runs 0..2 and Anthropic's 0..1. Halving keeps the ends meaning the same
  // (0 = greedy, the maximum = the maximum) instead of clamping everything above 1 to 1.
  if (request.temperature != null) body.temperature = request.temperature / 2;
  if (request.top_p != null) body.top_p = request.top_p;
  if (request.tools && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      name: tool.function.name,
      ...(tool.function.description !== undefined ? { description: tool.function.description } : {}),
      // input_schema is mandatory and must describe an object, even for a tool without arguments.
      input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
    }));
    const choice = toolChoice(request);
    if (choice) body.tool_choice = choice;
  }
  const user = request.safety_identifier ?? request.user;
  if (user) body.metadata = { user_id: user };
  if (context.stream) body.stream = true;
  return body;
}

export function buildAnthropicRequest(request: ChatRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': anthropicVersion, ...context.provider.headers };
  if (context.provider.apiKey) headers['x-api-key'] = context.provider.apiKey;
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/messages`, method: 'POST', headers, body: JSON.stringify(buildAnthropicBody(request, context)) };
}
