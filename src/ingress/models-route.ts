import type { Catalog } from '../shared/catalog/catalog-types.js';
import { usdPerTokenString } from '../shared/pricing.js';

/** The OpenAI list shape, plus context length and per-token prices as decimal strings (OpenRouter's convention). */
export function modelsListBody(catalog: Catalog): string {
  const data = [...catalog.models.values()].map((model) => {
    const provider = catalog.providers.get(model.provider);
    return {
      id: model.id,
      object: 'model',
      created: model.created,
      owned_by: model.ownedBy,
      context_length: model.contextLength,
      max_output_tokens: model.maxOutputTokens,
      pricing: { prompt: usdPerTokenString(model.pricing.promptUsdPerMillion), completion: usdPerTokenString(model.pricing.completionUsdPerMillion) },
      pricing_usd_per_million: { prompt: model.pricing.promptUsdPerMillion, completion: model.pricing.completionUsdPerMillion },
      provider: model.provider,
      provider_configured: Boolean(provider && (provider.apiKey || !provider.apiKeyVariable)),
    };
  });
  return JSON.stringify({ object: 'list', data });
}
