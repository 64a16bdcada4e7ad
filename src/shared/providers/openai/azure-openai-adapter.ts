import type { InternalRequest } from '../../internal/request.js';
import type { AdapterContext, ChatAdapter, ProviderHttpRequest } from '../chat-adapter.js';
import { openAiAdapter, parseOpenAiError } from './openai-adapter.js';
import { buildOpenAiBody } from './openai-request.js';
import { OpenAiStreamTranslator } from './openai-stream-translator.js';

// Azure OpenAI speaks the OpenAI wire format; only the address and the key header differ. The
// deployment name (the catalog's upstream model) selects the model, so the body's `model` is ignored.
// Azure opens streams with a chunk of prompt_filter_results and no choices, which the OpenAI
// translator already turns into no parts.

export const defaultAzureApiVersion = '2024-10-21';

function buildRequest(request: InternalRequest, context: AdapterContext): ProviderHttpRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers['api-key'] = context.provider.apiKey;
  if (context.stream) headers.accept = 'text/event-stream';
  const deployment = encodeURIComponent(context.upstreamModel);
  const apiVersion = encodeURIComponent(context.provider.apiVersion ?? defaultAzureApiVersion);
  return {
    url: `${context.provider.baseUrl}/openai/deployments/${deployment}/chat/completions?api-version=${apiVersion}`,
    method: 'POST',
    headers,
    body: buildOpenAiBody(request, context),
  };
}

export const azureOpenAiAdapter: ChatAdapter = {
  supportsMultipleChoices: true,
  buildRequest,
  parseResponse: openAiAdapter.parseResponse,
  createStreamTranslator: () => new OpenAiStreamTranslator(),
  parseError: parseOpenAiError,
};
