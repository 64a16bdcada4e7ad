import type { ChatRequest } from '../chat-request-schema.js';
import type {
  AdapterContext,
  CompletionChoice,
  FinishReason,
  NormalizedCompletion,
  ProviderAdapter,
  ProviderHttpRequest,
  UpstreamFailure,
} from './provider-adapter.js';
import { OpenAiStreamTranslator } from './openai-stream-translator.js';
import { readOpenAiUsage } from './openai-usage.js';
import { failureFromStatus, parseJsonOrUndefined, shortText } from './upstream-errors.js';

// The OpenAI Chat Completions wire format, which most providers (Groq, Together, DeepSeek, ...) also speak.

export function buildOpenAiBody(request: ChatRequest, context: AdapterContext): string {
  const { fallbacks: _fallbacks, stream_options: _streamOptions, ...rest } = request;
  const body: Record<string, unknown> = { ...rest, model: context.upstreamModel };
  if (context.stream) {
    body.stream = true;
    // Always ask for usage so billing is exact; the ingress passes it on only if the client asked.
    body.stream_options = { include_usage: true };
  } else {
    delete body.stream;
  }
  return JSON.stringify(body);
}

function buildRequest(request: ChatRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers.authorization = `Bearer ${context.provider.apiKey}`;
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/chat/completions`, method: 'POST', headers, body: buildOpenAiBody(request, context) };
}

function parseResponse(body: string): NormalizedCompletion {
  const parsed = JSON.parse(body) as { choices?: unknown[]; usage?: unknown; system_fingerprint?: string };
  if (!Array.isArray(parsed.choices)) throw new Error('The provider answered without choices.');
  const choices = parsed.choices.map((raw, position): CompletionChoice => {
    const choice = raw as { index?: number; message?: Record<string, unknown>; finish_reason?: string | null; logprobs?: unknown };
    const message = choice.message ?? {};
    const normalized: CompletionChoice = {
      index: typeof choice.index === 'number' ? choice.index : position,
      message: { role: 'assistant', content: typeof message.content === 'string' ? message.content : null },
      finish_reason: (choice.finish_reason ?? 'stop') as FinishReason,
    };
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) normalized.message.tool_calls = message.tool_calls as CompletionChoice['message']['tool_calls'];
    if (typeof message.refusal === 'string') normalized.message.refusal = message.refusal;
    if (choice.logprobs != null) normalized.logprobs = choice.logprobs;
    return normalized;
  });
  const completion: NormalizedCompletion = { choices };
  const usage = readOpenAiUsage(parsed.usage);
  if (usage) completion.usage = usage;
  if (typeof parsed.system_fingerprint === 'string') completion.systemFingerprint = parsed.system_fingerprint;
  return completion;
}

export function parseOpenAiError(status: number, headers: Record<string, string>, body: string): UpstreamFailure {
  const parsed = parseJsonOrUndefined(body) as { error?: { message?: string } | string } | undefined;
  const error = parsed?.error;
  const message = typeof error === 'string' ? error : typeof error?.message === 'string' ? error.message : shortText(body) || `HTTP ${status}`;
  return failureFromStatus(status, headers, message);
}

export const openAiAdapter: ProviderAdapter = {
  supportsMultipleChoices: true,
  buildRequest,
  parseResponse,
  createStreamTranslator: () => new OpenAiStreamTranslator(),
  parseError: parseOpenAiError,
};
