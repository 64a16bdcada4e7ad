import type { Catalog } from '../../../shared/catalog/catalog-types.js';
import { countPromptTokens } from '../../../shared/token-counter.js';
import type { SurfaceHeaders } from '../../pipeline/surface.js';
import { resolveTargets } from '../../pipeline/model-resolution.js';
import { parseMessagesRequest } from './messages-schema.js';
import { messagesToInternal } from './messages-to-internal.js';

/**
 * POST /v1/messages/count_tokens: the prompt's size as the gateway's tokenizer counts it, for any
 * catalog model. The ingress makes no provider call of its own, so for Anthropic models the count
 * is an estimate (Anthropic's tokenizer is not public); it is the count budgets reserve by.
 */
export function countMessageTokens(catalog: Catalog, body: unknown, headers: SurfaceHeaders, allowedModels: readonly string[] | null = null): string {
  const request = messagesToInternal(parseMessagesRequest(body, true), headers);
  resolveTargets(catalog, { ...request, fallbacks: [] }, 'chat', allowedModels);
  return JSON.stringify({ input_tokens: countPromptTokens(request) });
}
