import type { Embedding } from '../../../shared/embeddings/embeddings-request.js';
import type { Usage } from '../../../shared/usage.js';

/** OpenAI's embeddings response; `model` is the catalog model that served the request. */
export function embeddingsBody(model: string, embeddings: Embedding[], usage: Usage): string {
  const data = embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding }));
  const reported: Record<string, unknown> = { prompt_tokens: usage.prompt_tokens, total_tokens: usage.prompt_tokens };
  // As on chat: a count the provider did not report is the gateway's estimate, and says so.
  if (usage.estimated) reported.estimated = true;
  if (usage.cost !== undefined) reported.cost = usage.cost;
  return JSON.stringify({ object: 'list', data, model, usage: reported });
}
