import type { InternalRequest } from '../../internal/request.js';
import type { AdapterContext, ChatAdapter, ProviderHttpRequest, UpstreamFailure } from '../chat-adapter.js';
import { buildOpenAiBody } from './openai-request.js';
import { parseOpenAiResponse } from './openai-response.js';
import { OpenAiStreamTranslator } from './openai-stream-translator.js';
import { failureFromStatus, parseJsonOrUndefined, shortText } from '../upstream-errors.js';

// The OpenAI Chat Completions wire format, which most providers (Groq, Together, DeepSeek, ...) also speak.

function buildRequest(request: InternalRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers.authorization = `Bearer ${context.provider.apiKey}`;
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/chat/completions`, method: 'POST', headers, body: buildOpenAiBody(request, context) };
}

export function parseOpenAiError(status: number, headers: Record<string, string>, body: string): UpstreamFailure {
  const parsed = parseJsonOrUndefined(body) as { error?: { message?: string } | string } | undefined;
  const error = parsed?.error;
  const message = typeof error === 'string' ? error : typeof error?.message === 'string' ? error.message : shortText(body) || `HTTP ${status}`;
  return failureFromStatus(status, headers, message);
}

export const openAiAdapter: ChatAdapter = {
  supportsMultipleChoices: true,
  buildRequest,
  parseResponse: (body) => parseOpenAiResponse(body),
  createStreamTranslator: () => new OpenAiStreamTranslator(),
  parseError: parseOpenAiError,
};
