import type { InternalRequest } from '../../internal/request.js';
import { openAiAdapter, parseOpenAiError } from '../openai/openai-adapter.js';
import type { AdapterContext, ChatAdapter, ProviderHttpRequest, SseEvent, StreamPart, StreamTranslator } from '../chat-adapter.js';
import { parseJsonOrUndefined } from '../upstream-errors.js';
import { buildResponsesBody, nativeResponsesFields } from './responses-request.js';
import { parseResponsesBody } from './responses-parse.js';
import { ResponsesStreamTranslator } from './responses-stream-translator.js';

// An OpenAI-format provider that also serves the Responses API (catalog `api: openai-responses`,
// OpenAI itself): a Responses client's request goes to POST {base_url}/responses as the client
// sent it; every other request goes to Chat Completions, exactly as with `api: openai`, so Chat
// clients keep every field (stop, logprobs, n...) the Responses API lacks.

function buildRequest(request: InternalRequest, context: AdapterContext): ProviderHttpRequest {
  const fields = nativeResponsesFields(request);
  if (!fields) return openAiAdapter.buildRequest(request, context);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers.authorization = `Bearer ${context.provider.apiKey}`;
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/responses`, method: 'POST', headers, body: buildResponsesBody(request, fields, context) };
}

/** Reads whichever of the two streams the request asked for: Responses events carry a `type`. */
class EitherStreamTranslator implements StreamTranslator {
  private chosen: StreamTranslator | undefined;

  constructor(private readonly context: AdapterContext) {}

  push(event: SseEvent): StreamPart[] {
    if (!this.chosen) {
      if (event.data === '[DONE]') return [{ type: 'end' }];
      const data = parseJsonOrUndefined(event.data) as { type?: unknown } | undefined;
      this.chosen = typeof data?.type === 'string' ? new ResponsesStreamTranslator() : openAiAdapter.createStreamTranslator(this.context);
    }
    return this.chosen.push(event);
  }

  finish(): StreamPart[] {
    return this.chosen?.finish?.() ?? [];
  }
}

export const openAiResponsesAdapter: ChatAdapter = {
  supportsMultipleChoices: openAiAdapter.supportsMultipleChoices,
  buildRequest,
  parseResponse(body, context) {
    const parsed = parseJsonOrUndefined(body) as Record<string, unknown> | undefined;
    return parsed?.object === 'response' ? parseResponsesBody(parsed) : openAiAdapter.parseResponse(body, context);
  },
  createStreamTranslator: (context) => new EitherStreamTranslator(context),
  parseError: parseOpenAiError,
};
