import type { ContentPart, InternalMessage, MediaSource, ToolResultPart } from '../../internal/parts.js';
import { textOfParts } from '../../internal/parts.js';
import type { InternalRequest, ToolChoice } from '../../internal/request.js';
import { outputCeiling, type AdapterContext } from '../chat-adapter.js';

// Internal request -> OpenAI Chat Completions body. A request that came from a Chat Completions
// client gets back every field it sent (the unmodelled ones ride in extras.openai); one from
// another format gets what Chat Completions can express. Losses (thinking blocks, cache hints,
// top_k, images inside tool results) are listed in the README.

type Json = Record<string, unknown>;

export function dataUrl(source: Extract<MediaSource, { kind: 'base64' | 'text' }>): string {
  const data = source.kind === 'text' ? Buffer.from(source.data, 'utf8').toString('base64') : source.data;
  return `data:${source.mediaType};base64,${data}`;
}

function mediaUrl(source: MediaSource): string | undefined {
  if (source.kind === 'url') return source.url;
  if (source.kind === 'file_id') return undefined;
  return dataUrl(source);
}

function userPart(part: ContentPart): Json | undefined {
  const extras = part.type === 'opaque' ? undefined : part.extras?.openai;
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text, ...extras };
    case 'image': {
      const url = mediaUrl(part.source);
      if (!url) return undefined;
      const image: Json = { url };
      if (part.detail !== undefined) image.detail = part.detail;
      return { type: 'image_url', image_url: image, ...extras };
    }
    case 'audio':
      return { type: 'input_audio', input_audio: { data: part.data, format: part.format }, ...extras };
    case 'file': {
      const file: Json = {};
      if (part.source.kind === 'file_id') file.file_id = part.source.id;
      else if (part.source.kind === 'url') return { type: 'text', text: part.source.url };
      else file.file_data = dataUrl(part.source);
      if (part.filename !== undefined) file.filename = part.filename;
      return { type: 'file', file, ...extras };
    }
    case 'opaque':
      return part.wire === 'openai' ? part.value : undefined;
    default:
      return undefined;
  }
}

function toolResultMessage(part: ToolResultPart): Json {
  // Tool messages carry text only; other parts of a result have no place there.
  const content = typeof part.content === 'string' ? part.content : textOfParts(part.content);
  return { role: 'tool', tool_call_id: part.toolCallId, content, ...part.extras?.openai };
}

function textContent(message: InternalMessage, parts: ContentPart[]): string | Json[] {
  if (message.plainText) return textOfParts(parts);
  const texts = parts.filter((part) => part.type === 'text');
  return texts.map((part) => ({ type: 'text', text: part.text, ...part.extras?.openai }));
}

function assistantMessage(message: InternalMessage): Json {
  const body: Json = { role: 'assistant' };
  const texts = message.content.filter((part) => part.type === 'text');
  const calls = message.content.filter((part) => part.type === 'tool_call');
  const refusal = message.content.find((part) => part.type === 'refusal');
  if (message.plainText || texts.length > 0) body.content = message.plainText ? textOfParts(texts) : textContent(message, texts);
  else body.content = null;
  if (calls.length > 0) body.tool_calls = calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  if (refusal) body.refusal = refusal.text;
  return { ...body, ...message.extras?.openai };
}

function appendMessages(out: Json[], message: InternalMessage): void {
  const extras = message.extras?.openai;
  switch (message.role) {
    case 'system': {
      const content = textContent(message, message.content);
      if (content === '' || (Array.isArray(content) && content.length === 0)) return;
      out.push({ role: 'system', content, ...extras });
      return;
    }
    case 'assistant':
      out.push(assistantMessage(message));
      return;
    case 'tool':
    case 'user': {
      // Tool results come first: OpenAI wants them right after the assistant turn that asked.
      for (const part of message.content) if (part.type === 'tool_result') out.push(toolResultMessage(part));
      const rest = message.content.filter((part) => part.type !== 'tool_result');
      if (message.role === 'tool' || (rest.length === 0 && !message.plainText)) return;
      if (message.plainText && rest.every((part) => part.type === 'text')) {
        out.push({ role: 'user', content: textOfParts(rest), ...extras });
        return;
      }
      const parts = rest.map(userPart).filter((part): part is Json => part !== undefined);
      if (parts.length > 0) out.push({ role: 'user', content: parts, ...extras });
      return;
    }
  }
}

export function openAiMessages(messages: InternalMessage[]): Json[] {
  const out: Json[] = [];
  for (const message of messages) appendMessages(out, message);
  return out;
}

function toolChoice(choice: ToolChoice): unknown {
  return choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type;
}

export function buildOpenAiBody(request: InternalRequest, context: AdapterContext): string {
  const same = request.source === 'openai';
  const extras = same ? request.extras?.openai : undefined;
  const body: Json = { ...extras, model: context.upstreamModel, messages: openAiMessages(request.messages) };
  const ceiling = outputCeiling(request, context, same);
  if (ceiling !== undefined) body[extras && 'max_completion_tokens' in extras ? 'max_completion_tokens' : 'max_tokens'] = ceiling;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  // Chat Completions takes at most 4 stop sequences; Anthropic allows more.
  if (request.stop !== undefined) body.stop = same && extras && typeof extras.stop === 'string' ? request.stop[0] : request.stop.slice(0, 4);
  if (request.n !== 1) body.n = request.n;
  else delete body.n;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.presencePenalty !== undefined) body.presence_penalty = request.presencePenalty;
  if (request.frequencyPenalty !== undefined) body.frequency_penalty = request.frequencyPenalty;
  if (request.user !== undefined) body.user = request.user;
  // Only an OpenAI client's effort is sent: a non-reasoning model refuses the field.
  if (same && request.reasoning?.effort !== undefined) body.reasoning_effort = request.reasoning.effort;
  const format = request.responseFormat;
  if (format) {
    if (format.type === 'json_schema') {
      const { type: _type, ...schema } = format;
      body.response_format = { type: 'json_schema', json_schema: schema };
    } else body.response_format = { type: format.type };
  }
  const tools = (request.tools ?? []).flatMap((tool): Json[] => {
    if (tool.type === 'opaque') return tool.wire === 'openai' ? [tool.value] : [];
    const fn: Json = { name: tool.name };
    if (tool.description !== undefined) fn.description = tool.description;
    fn.parameters = tool.inputSchema;
    if (tool.strict !== undefined) fn.strict = tool.strict;
    return [{ type: 'function', function: fn, ...tool.extras?.openai }];
  });
  if (tools.length > 0) {
    body.tools = tools;
    if (request.toolChoice) body.tool_choice = toolChoice(request.toolChoice);
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  } else if (request.toolChoice?.type === 'none' && same) body.tool_choice = 'none';
  if (context.stream) {
    body.stream = true;
    // Always ask for usage so billing is exact; the ingress passes it on only if the client asked.
    body.stream_options = { include_usage: true };
  } else {
    delete body.stream;
    delete body.stream_options;
  }
  return JSON.stringify(body);
}
