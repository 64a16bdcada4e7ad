import type { ProviderConfig } from '../catalog/catalog-types.js';
import type { Embedding, EmbeddingsRequest } from '../embeddings/embeddings-request.js';
import type { ProviderHttpRequest, UpstreamFailure } from './chat-adapter.js';

// Adapters for embedding models, one per wire format that has them. Like the chat adapters they
// only translate: the worker's provider client sends what they build and feeds them what comes back.

export interface EmbeddingsContext {
  provider: ProviderConfig;
  upstreamModel: string;
}

export interface NormalizedEmbeddings {
  /** One per input, in input order, as the provider sent it (floats or base64). */
  embeddings: Embedding[];
  /** Absent when the provider reports no usage (Gemini); the worker then counts the input. */
  promptTokens?: number;
}

export interface EmbeddingsAdapter {
  /** Throws a GatewayError when the request cannot be expressed in this format. */
  buildRequest(request: EmbeddingsRequest, context: EmbeddingsContext): ProviderHttpRequest;
  /** Throws when the body is not a complete answer for `inputCount` inputs. */
  parseResponse(body: string, inputCount: number): NormalizedEmbeddings;
  parseError(status: number, headers: Record<string, string>, body: string): UpstreamFailure;
}
