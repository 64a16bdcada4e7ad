import { GatewayError } from '../../errors.js';
import { dataUrlPattern } from '../../internal/media.js';
import type { ContentPart, InternalMessage, MediaSource } from '../../internal/parts.js';
import { textOfParts } from '../../internal/parts.js';
import type { InternalRequest, ToolChoice } from '../../internal/request.js';
import { outputCeiling, type AdapterContext, type ProviderHttpRequest } from '../chat-adapter.js';
import { hasProperties, toGeminiSchema } from './gemini-schema.js';

// Internal request -> Gemini generateContent request.

type Part = Record<string, unknown>;
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

const imageTypesByExtension: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif', heic: 'image/heic', heif: 'image/heif' };

function unsupported(param: string, detail: string): GatewayError {
  return new GatewayError('invalid_value', `Invalid value for '${param}': ${detail}`, { param });
}

function mediaPart(media: MediaSource, param: string, kind: string): Part {
  if (media.kind === 'base64') return { inlineData: { mimeType: media.mediaType, data: media.data } };
  if (media.kind === 'text') return { text: media.data };
  if (media.kind === 'url') {
    const data = dataUrlPattern.exec(media.url);
    if (data) return { inlineData: { mimeType: data[1], data: data[2] } };
    if (/^https?:\/\//i.test(media.url)) {
      // Adapters do no I/O, so a remote image is passed by reference; Gemini needs its type up front.
      const extension = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(media.url)?.[1]?.toLowerCase() ?? '';
      return { fileData: { mimeType: imageTypesByExtension[extension] ?? 'image/jpeg', fileUri: media.url } };
    }
    throw unsupported(param, 'images must be data: URLs or http(s) URLs.');
  }
  throw unsupported(param, `Gemini models do not accept '${kind}' content parts in this form.`);
}

function userParts(content: ContentPart[], param: string, functionNames: Map<string, string>): Part[] {
  return content.flatMap((part, position): Part[] => {
    const where = `${param}[${position}]`;
    switch (part.type) {
      case 'text':
        return part.text !== '' ? [{ text: part.text }] : [];
      case 'image':
        return [mediaPart(part.source, where, 'image_url')];
      case 'file':
        return [mediaPart(part.source, where, 'file')];
      case 'audio':
        return [{ inlineData: { mimeType: `audio/${part.format}`, data: part.data } }];
      case 'tool_result': {
        const name = functionNames.get(part.toolCallId);
        if (!name) throw unsupported(`${param.replace(/\.content$/, '')}.tool_call_id`, `no earlier assistant tool call has the id '${part.toolCallId}'.`);
        const text = typeof part.content === 'string' ? part.content : textOfParts(part.content);
        return [{ functionResponse: { name, response: functionResponse(text) } }];
      }
      default:
        // Reasoning and other formats' blocks have no Gemini counterpart.
        return [];
    }
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

export function toGeminiContents(messages: InternalMessage[]): { systemInstruction?: { parts: Part[] }; contents: Content[] } {
  const system: Part[] = [];
  const contents: Content[] = [];
  // Gemini answers a call by function name, while OpenAI answers by call id; the id is resolved here.
  const functionNames = new Map<string, string>();
  messages.forEach((message, index) => {
    const param = `messages[${index}].content`;
    switch (message.role) {
      case 'system': {
        const text = textOfParts(message.content);
        if (text !== '') system.push({ text });
        break;
      }
      case 'assistant': {
        const parts: Part[] = [];
        const text = textOfParts(message.content);
        if (text !== '') parts.push({ text });
        for (const call of message.content) {
          if (call.type !== 'tool_call') continue;
          functionNames.set(call.id, call.name);
          const part: Part = { functionCall: { name: call.name, args: functionArgs(call.arguments) } };
          const signature = call.extras?.gemini?.thoughtSignature;
          if (typeof signature === 'string') part.thoughtSignature = signature;
          parts.push(part);
        }
        appendTurn(contents, 'model', parts);
        break;
      }
      default:
        appendTurn(contents, 'user', userParts(message.content, param, functionNames));
    }
  });
  return system.length > 0 ? { systemInstruction: { parts: system }, contents } : { contents };
}

function generationConfig(request: InternalRequest, context: AdapterContext): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  // Gemini's temperature range is 0..2 like OpenAI's, so it passes unchanged.
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (request.topK !== undefined) config.topK = request.topK;
  const ceiling = outputCeiling(request, context, false);
  if (ceiling !== undefined) config.maxOutputTokens = ceiling;
  if (request.stop !== undefined) config.stopSequences = request.stop;
  if (request.n !== 1 || request.extras?.openai?.n !== undefined) config.candidateCount = request.n;
  if (request.presencePenalty !== undefined) config.presencePenalty = request.presencePenalty;
  if (request.frequencyPenalty !== undefined) config.frequencyPenalty = request.frequencyPenalty;
  if (request.seed !== undefined) config.seed = request.seed;
  const format = request.responseFormat;
  if (format?.type === 'json_object' || format?.type === 'json_schema') config.responseMimeType = 'application/json';
  if (format?.type === 'json_schema' && format.schema !== undefined) config.responseSchema = toGeminiSchema(format.schema);
  return config;
}

function toolConfig(choice: ToolChoice | undefined): Record<string, unknown> | undefined {
  if (choice === undefined) return undefined;
  if (choice.type === 'tool') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.name] } };
  const modes = { auto: 'AUTO', required: 'ANY', none: 'NONE' } as const;
  return { functionCallingConfig: { mode: modes[choice.type] } };
}

export function buildGeminiBody(request: InternalRequest, context: AdapterContext): Record<string, unknown> {
  const body: Record<string, unknown> = { ...toGeminiContents(request.messages), generationConfig: generationConfig(request, context) };
  const tools = (request.tools ?? []).filter((tool) => tool.type === 'function');
  if (tools.length > 0) {
    body.tools = [
      {
        functionDeclarations: tools.map((tool) => ({
          name: tool.name,
          ...(tool.description !== undefined ? { description: tool.description } : {}),
          ...(hasProperties(tool.inputSchema) ? { parameters: toGeminiSchema(tool.inputSchema) } : {}),
        })),
      },
    ];
    // Gemini has no switch for parallel_tool_calls; it decides how many calls to make per turn.
    const config = toolConfig(request.toolChoice);
    if (config) body.toolConfig = config;
  }
  return body;
}

export function buildGeminiRequest(request: InternalRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers['x-goog-api-key'] = context.provider.apiKey;
  const method = context.stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/models/${encodeURIComponent(context.upstreamModel)}:${method}`, method: 'POST', headers, body: JSON.stringify(buildGeminiBody(request, context)) };
}
