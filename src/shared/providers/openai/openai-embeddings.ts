import type { Embedding, EmbeddingsRequest } from '../../embeddings/embeddings-request.js';
import { defaultAzureApiVersion } from './azure-openai-adapter.js';
import type { EmbeddingsAdapter, EmbeddingsContext, NormalizedEmbeddings } from '../embeddings-adapter.js';
import { parseOpenAiError } from './openai-adapter.js';
import type { ProviderHttpRequest } from '../chat-adapter.js';

// POST /embeddings in the OpenAI format (OpenAI, Mistral, Together, ... and Azure's deployments).
// The client's encoding is asked for upstream; whatever comes back, floats or base64, the worker
// converts to what the client asked for.

function body(request: EmbeddingsRequest, context: EmbeddingsContext): string {
  const wire: Record<string, unknown> = { model: context.upstreamModel, input: request.inputs, encoding_format: request.encodingFormat };
  if (request.dimensions !== undefined) wire.dimensions = request.dimensions;
  if (request.user !== undefined) wire.user = request.user;
  return JSON.stringify(wire);
}

function isEmbedding(value: unknown): value is Embedding {
  return typeof value === 'string' || (Array.isArray(value) && value.every((entry) => typeof entry === 'number'));
}

export function parseOpenAiEmbeddings(text: string, inputCount: number): NormalizedEmbeddings {
  const parsed = JSON.parse(text) as { data?: unknown; usage?: { prompt_tokens?: unknown } };
  if (!Array.isArray(parsed.data) || parsed.data.length !== inputCount) throw new Error(`The provider answered with ${Array.isArray(parsed.data) ? parsed.data.length : 'no'} embeddings for ${inputCount} inputs.`);
  const embeddings: Embedding[] = new Array(inputCount);
  parsed.data.forEach((raw: { index?: unknown; embedding?: unknown }, position) => {
    const index = typeof raw.index === 'number' ? raw.index : position;
    if (!isEmbedding(raw.embedding) || index < 0 || index >= inputCount || embeddings[index] !== undefined) throw new Error('The provider answered with a malformed embedding.');
    embeddings[index] = raw.embedding;
  });
  const promptTokens = parsed.usage?.prompt_tokens;
  return typeof promptTokens === 'number' ? { embeddings, promptTokens } : { embeddings };
}

function headers(context: EmbeddingsContext, keyHeader: 'authorization' | 'api-key'): Record<string, string> {
  const result: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) result[keyHeader] = keyHeader === 'authorization' ? `Bearer ${context.provider.apiKey}` : context.provider.apiKey;
  return result;
}

export const openAiEmbeddingsAdapter: EmbeddingsAdapter = {
  buildRequest: (request, context): ProviderHttpRequest => ({ url: `${context.provider.baseUrl}/embeddings`, method: 'POST', headers: headers(context, 'authorization'), body: body(request, context) }),
  parseResponse: parseOpenAiEmbeddings,
  parseError: parseOpenAiError,
};

/** Azure selects the model by deployment name in the path, as its chat adapter does. */
export const azureEmbeddingsAdapter: EmbeddingsAdapter = {
  buildRequest(request, context): ProviderHttpRequest {
    const deployment = encodeURIComponent(context.upstreamModel);
    const apiVersion = encodeURIComponent(context.provider.apiVersion ?? defaultAzureApiVersion);
    return {
      url: `${context.provider.baseUrl}/openai/deployments/${deployment}/embeddings?api-version=${apiVersion}`,
      method: 'POST',
      headers: headers(context, 'api-key'),
      body: body(request, context),
    };
  },
  parseResponse: parseOpenAiEmbeddings,
  parseError: parseOpenAiError,
};
