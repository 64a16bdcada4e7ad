import type { ChatMessage, ChatRequest } from '../../chat-request-schema.js';
import { GatewayError } from '../../errors.js';
import type { AdapterContext, ProviderHttpRequest } from '../provider-adapter.js';
import { hasProperties, toGeminiSchema } from './gemini-schema.js';

// OpenAI Chat Completions request -> Gemini generateContent request.

type Part = Record<string, unknown>;
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

const dataUrlPattern = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

function textOf(content: string | Array<Record<string, unknown>> | null | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

const imageTypesByExtension: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif', heic: 'image/heic', heif: 'image/heif' };

function unsupported(param: string, detail: string): GatewayError {
  return new GatewayError('invalid_value', `Invalid value for '${param}': ${detail}`, { param });
}

function userParts(content: Extract<ChatMessage, { role: 'user' }>['content'], param: string): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  return content.flatMap((part, position): Part[] => {
    const where = `${param}[${position}]`;
    if (part.type === 'text') return typeof part.text === 'string' && part.text !== '' ? [{ text: part.text }] : [];
    if (part.type === 'image_url') {
      const url = (part.image_url as { url: string }).url;
      const data = dataUrlPattern.exec(url);
      if (data) return [{ inlineData: { mimeType: data[1], data: data[2] } }];
      if (/^https?:\/\//i.test(url)) {
        // Adapters do no I/O, so a remote image is passed by reference; Gemini needs its type up front.
        const extension = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase() ?? '';
        return [{ fileData: { mimeType: imageTypesByExtension[extension] ?? 'image/jpeg', fileUri: url } }];
      }
      throw unsupported(where, 'images must be data: URLs or http(s) URLs.');
    }
    if (part.type === 'input_audio') {
      const audio = part.input_audio as { data?: string; format?: string } | undefined;
      if (audio?.data && audio.format) return [{ inlineData: { mimeType: `audio/${audio.format}`, data: audio.data } }];
    }
    if (part.type === 'file') {
      const data = dataUrlPattern.exec((part.file as { file_data?: string } | undefined)?.file_data ?? '');
      if (data) return [{ inlineData: { mimeType: data[1], data: data[2] } }];
    }
    throw unsupported(where, `Gemini models do not accept '${part.type}' content parts in this form.`);
  });
}

function functionArgs(argumentsText: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** functionResponse.response must be a JSON object; other tool output is wrapped as {content}. */
function functionResponse(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // plain text output
  }
  return { content: text };
}

/** Gemini expects alternating turns, and all answers to one round of calls in a single turn. */
function appendTurn(contents: Content[], role: Content['role'], parts: Part[]): void {
  if (parts.length === 0) return;
  const last = contents.at(-1);
  if (last && last.role === role) last.parts.push(...parts);
  else contents.push({ role, parts });
}

export function toGeminiContents(messages: ChatMessage[]): { systemInstruction?: { parts: Part[] }; contents: Content[] } {
  const system: Part[] = [];
  const contents: Content[] = [];
  // Gemini answers a call by function name, while OpenAI answers by call id; the id is resolved here.
  const functionNames = new Map<string, string>();
  messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content);
        if (text !== '') system.push({ text });
        break;
      }
      case 'user':
        appendTurn(contents, 'user', userParts(message.content, `messages[${index}].content`));
        break;
      case 'assistant': {
        const parts: Part[] = [];
        const text = textOf(message.content);
        if (text !== '') parts.push({ text });
        for (const call of message.tool_calls ?? []) {
          functionNames.set(call.id, call.function.name);
          parts.push({ functionCall: { name: call.function.name, args: functionArgs(call.function.arguments) } });
        }
        appendTurn(contents, 'model', parts);
        break;
      }
      case 'tool': {
        const name = functionNames.get(message.tool_call_id);
        if (!name) {
          throw unsupported(`messages[${index}].tool_call_id`, `no earlier assistant tool call has the id '${message.tool_call_id}'.`);
        }
        appendTurn(contents, 'user', [{ functionResponse: { name, response: functionResponse(textOf(message.content)) } }]);
        break;
      }
    }
  });
  return system.length > 0 ? { systemInstruction: { parts: system }, contents } : { contents };
}

function generationConfig(request: ChatRequest): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  // Gemini's temperature range is 0..2 like OpenAI's, so it passes unchanged.
  if (request.temperature != null) config.temperature = request.temperature;
  if (request.top_p != null) config.topP = request.top_p;
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (maxTokens != null) config.maxOutputTokens = maxTokens;
  if (request.stop != null) config.stopSequences = typeof request.stop === 'string' ? [request.stop] : request.stop;
  if (request.n != null) config.candidateCount = request.n;
  if (request.presence_penalty != null) config.presencePenalty = request.presence_penalty;
  if (request.frequency_penalty != null) config.frequencyPenalty = request.frequency_penalty;
  if (request.seed != null) config.seed = request.seed;
  const format = request.response_format;
  if (format?.type === 'json_object' || format?.type === 'json_schema') config.responseMimeType = 'application/json';
  if (format?.type === 'json_schema' && format.json_schema.schema !== undefined) config.responseSchema = toGeminiSchema(format.json_schema.schema);
  return config;
}

function toolConfig(choice: ChatRequest['tool_choice']): Record<string, unknown> | undefined {
  if (choice === undefined) return undefined;
  if (choice === 'auto') return { functionCallingConfig: { mode: 'AUTO' } };
  if (choice === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  if (choice === 'none') return { functionCallingConfig: { mode: 'NONE' } };
  return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function.name] } };
}

export function buildGeminiBody(request: ChatRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { ...toGeminiContents(request.messages), generationConfig: generationConfig(request) };
  if (request.tools && request.tools.length > 0) {
    body.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.function.name,
          ...(tool.function.description !== undefined ? { description: tool.function.description } : {}),
          ...(hasProperties(tool.function.parameters) ? { parameters: toGeminiSchema(tool.function.parameters) } : {}),
        })),
      },
    ];
    // Gemini has no switch for parallel_tool_calls; it decides how many calls to make per turn.
    const config = toolConfig(request.tool_choice);
    if (config) body.toolConfig = config;
  }
  return body;
}

export function buildGeminiRequest(request: ChatRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers['x-goog-api-key'] = context.provider.apiKey;
  const method = context.stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/models/${encodeURIComponent(context.upstreamModel)}:${method}`, method: 'POST', headers, body: JSON.stringify(buildGeminiBody(request)) };
}
