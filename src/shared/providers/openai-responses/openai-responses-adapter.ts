import type { InternalRequest } from '../../internal/request.js';
import { parseOpenAiError } from '../openai-adapter.js';
import type { AdapterContext, ProviderAdapter, ProviderHttpRequest } from '../provider-adapter.js';
import { buildResponsesBody } from './responses-request.js';
import { parseResponsesBody } from './responses-parse.js';
import { ResponsesStreamTranslator } from './responses-stream-translator.js';

// Providers that speak OpenAI's Responses API (catalog `api: openai-responses`): OpenAI itself,
// and gateways or servers that serve POST {base_url}/responses. A Responses client's request
// reaches them with its own items and fields; other clients' requests are translated.

function buildRequest(request: InternalRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers.authorization = `Bearer ${context.provider.apiKey}`;
  if (context.stream) headers.accept = 'text/event-stream';
  return { url: `${context.provider.baseUrl}/responses`, method: 'POST', headers, body: buildResponsesBody(request, context) };
}

export const openAiResponsesAdapter: ProviderAdapter = {
  // One response per call; n > 1 is fanned out.
  supportsMultipleChoices: false,
  buildRequest,
  parseResponse: (body) => parseResponsesBody(body),
  createStreamTranslator: () => new ResponsesStreamTranslator(),
  parseError: parseOpenAiError,
};
