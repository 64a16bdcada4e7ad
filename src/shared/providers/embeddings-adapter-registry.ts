import type { EmbeddingsApi } from '../catalog/catalog-types.js';
import type { EmbeddingsAdapter } from './embeddings-adapter.js';
import { geminiEmbeddingsAdapter } from './gemini/gemini-embeddings.js';
import { azureEmbeddingsAdapter, openAiEmbeddingsAdapter } from './openai/openai-embeddings.js';

const adapters: Record<EmbeddingsApi, EmbeddingsAdapter> = {
  openai: openAiEmbeddingsAdapter,
  // A provider that speaks OpenAI's Responses API is OpenAI's API: /embeddings is there too.
  'openai-responses': openAiEmbeddingsAdapter,
  azure: azureEmbeddingsAdapter,
  gemini: geminiEmbeddingsAdapter,
};

/** The embeddings adapter of a wire format; the catalog only lets embedding models use these formats. */
export function embeddingsAdapterFor(api: EmbeddingsApi): EmbeddingsAdapter {
  return adapters[api];
}
