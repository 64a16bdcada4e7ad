import { countTextTokens } from '../token-counter.js';
import type { EmbeddingsRequest } from './embeddings-request.js';

/**
 * Input tokens of an embeddings request: token-id inputs count exactly, text is counted with the
 * gateway's tokenizer (for admission, and for billing when a provider reports no usage).
 */
export function countEmbeddingTokens(request: EmbeddingsRequest): number {
  let total = 0;
  for (const input of request.inputs) total += typeof input === 'string' ? countTextTokens(input) : input.length;
  return total;
}
