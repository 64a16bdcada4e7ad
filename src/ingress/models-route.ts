import { findModel, type Catalog, type ModelEntry, type ModelPricing } from '../shared/catalog/catalog-types.js';
import { GatewayError } from '../shared/errors.js';
import { modelAllowed } from '../shared/keys/model-allow-list.js';
import { cacheReadPrice, cacheWrite1hPrice, cacheWritePrice, reasoningPrice, usdPerTokenString } from '../shared/pricing.js';

/**
 * One model in the OpenAI list shape, plus its kind (chat or embeddings), context length and
 * per-token prices as decimal strings (OpenRouter's convention). Embedding models have no output.
 */
function modelObject(catalog: Catalog, model: ModelEntry): Record<string, unknown> {
  const provider = catalog.providers.get(model.provider);
  const chat = model.kind === 'chat';
  return {
    id: model.id,
    object: 'model',
    created: model.created,
    owned_by: model.ownedBy,
    kind: model.kind,
    context_length: model.contextLength,
    ...(chat ? { max_output_tokens: model.maxOutputTokens } : {}),
    pricing: { prompt: usdPerTokenString(model.pricing.promptUsdPerMillion), completion: usdPerTokenString(model.pricing.completionUsdPerMillion), ...(chat ? cachePricing(model.pricing, usdPerTokenString) : {}) },
    pricing_usd_per_million: { prompt: model.pricing.promptUsdPerMillion, completion: model.pricing.completionUsdPerMillion, ...(chat ? cachePricingPerMillion(model.pricing) : {}) },
    provider: model.provider,
    provider_configured: Boolean(provider && (provider.apiKey || !provider.apiKeyVariable)),
  };
}

/** The list a key sees: only the models its allow-list admits (every model for null). */
export function modelsListBody(catalog: Catalog, allowedModels: readonly string[] | null = null): string {
  const models = [...catalog.models.values()].filter((model) => modelAllowed(allowedModels, model.id));
  return JSON.stringify({ object: 'list', data: models.map((model) => modelObject(catalog, model)) });
}

/**
 * GET /v1/models/{model}: the model's list entry, found by id or alias (an alias answers with the
 * model it names). The id may arrive percent-encoded (the OpenAI clients encode its slash) or not.
 */
export function modelBody(catalog: Catalog, url: string, allowedModels: readonly string[] | null = null): string {
  const raw = url.slice('/v1/models/'.length);
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    name = raw;
  }
  const model = findModel(catalog, name);
  if (!model) throw new GatewayError('model_not_found', `The model \`${name}\` does not exist. GET /v1/models lists the models this gateway serves.`, { param: 'model' });
  if (!modelAllowed(allowedModels, model.id)) throw new GatewayError('model_not_allowed', `This API key may not use the model \`${model.id}\`. GET /v1/models lists the models it may use.`, { param: 'model' });
  return JSON.stringify(modelObject(catalog, model));
}

/** The prices a chat model bills beyond input and output, as charged (fallbacks applied): OpenRouter's field names, per token. */
function cachePricing(pricing: ModelPricing, format: (usdPerMillion: number) => string): Record<string, string> {
  return { input_cache_read: format(cacheReadPrice(pricing)), input_cache_write: format(cacheWritePrice(pricing)), internal_reasoning: format(reasoningPrice(pricing)) };
}

function cachePricingPerMillion(pricing: ModelPricing): Record<string, number> {
  return { cache_read: cacheReadPrice(pricing), cache_write: cacheWritePrice(pricing), cache_write_1h: cacheWrite1hPrice(pricing), reasoning: reasoningPrice(pricing) };
}
