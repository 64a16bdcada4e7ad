/** The wire formats a provider may speak; the catalog file's `api` field takes exactly these. */
export const providerApis = ['openai', 'openai-responses', 'azure', 'anthropic', 'gemini'] as const;
export type ProviderApi = (typeof providerApis)[number];

/** What a model does: chat models serve the chat surfaces, embedding models POST /v1/embeddings. */
export const modelKinds = ['chat', 'embeddings'] as const;
export type ModelKind = (typeof modelKinds)[number];

/** The wire formats with an embeddings endpoint; an embedding model's deployments must use one. */
export const embeddingsApis = ['openai', 'openai-responses', 'azure', 'gemini'] as const satisfies readonly ProviderApi[];
export type EmbeddingsApi = (typeof embeddingsApis)[number];

export function isEmbeddingsApi(api: ProviderApi): api is EmbeddingsApi {
  return (embeddingsApis as readonly string[]).includes(api);
}

export interface ProviderTimeouts {
  connectMs: number;
  firstTokenMs: number;
  totalMs: number;
}

/** When a deployment on this provider is taken out of rotation, and for how long. */
export interface CooldownPolicy {
  /** 0 disables cool-downs: the deployment always stays in rotation. */
  cooldownMs: number;
  /** Consecutive failures (other than 429s, which count at once) that start a cool-down. */
  failuresBeforeCooldown: number;
}

/** Long enough for a provider's per-minute window to move on, short enough to notice a recovery. */
export const defaultCooldown: CooldownPolicy = { cooldownMs: 30_000, failuresBeforeCooldown: 3 };

export interface ProviderConfig {
  name: string;
  api: ProviderApi;
  baseUrl: string;
  /** Undefined when the provider's key variable is unset: its models answer provider_not_configured. */
  apiKey?: string;
  apiKeyVariable?: string;
  apiVersion?: string;
  headers: Record<string, string>;
  timeouts: ProviderTimeouts;
  /** The catalog loader always sets it; configs built by hand may leave it to defaultCooldown. */
  cooldown?: CooldownPolicy;
}

export interface ModelPricing {
  /** Input tokens; for embedding models the only price. */
  promptUsdPerMillion: number;
  /** Output tokens; 0 for embedding models. */
  completionUsdPerMillion: number;
  /** Cached input read back; the input price when absent (the provider publishes no cache price). */
  cacheReadUsdPerMillion?: number;
  /** Input written to the cache (Anthropic's 5-minute writes); the input price when absent. */
  cacheWriteUsdPerMillion?: number;
  /** Input written to the 1-hour cache (Anthropic); the write price when absent. */
  cacheWrite1hUsdPerMillion?: number;
  /** Reasoning (thinking) output tokens; the output price when absent, as providers bill them. */
  reasoningUsdPerMillion?: number;
}

const pricingFields = ['promptUsdPerMillion', 'completionUsdPerMillion', 'cacheReadUsdPerMillion', 'cacheWriteUsdPerMillion', 'cacheWrite1hUsdPerMillion', 'reasoningUsdPerMillion'] as const satisfies readonly (keyof ModelPricing)[];

/** One place a model is served: a provider (account or key) and its name for the model there. */
export interface ModelDeployment {
  /** `<provider>/<upstream model>`: the key of its health state and its name in the ledger and logs. */
  id: string;
  provider: string;
  upstreamModel: string;
  /** Share of traffic relative to the model's other deployments. */
  weight: number;
  /** What a request served here costs. */
  pricing: ModelPricing;
}

export interface ModelEntry {
  id: string;
  kind: ModelKind;
  /** The first deployment's provider and upstream model, as /v1/models lists them. */
  provider: string;
  upstreamModel: string;
  /** At least one; a model written with provider + upstream_model has exactly that one. */
  deployments: ModelDeployment[];
  contextLength: number;
  maxOutputTokens: number;
  /** The model's list price; a deployment may override it for the requests it serves. */
  pricing: ModelPricing;
  ownedBy: string;
  created: number;
  /** Model ids tried in order when a request names no fallbacks. */
  fallbacks: string[];
}

export interface Catalog {
  providers: Map<string, ProviderConfig>;
  models: Map<string, ModelEntry>;
  /** Other names of models: alias -> model id. */
  aliases: Map<string, string>;
}

/** The model a client's name stands for: an id or an alias. */
export function findModel(catalog: Catalog, name: string): ModelEntry | undefined {
  return catalog.models.get(name) ?? catalog.models.get(catalog.aliases.get(name) ?? '');
}

/**
 * The dearest prices any of the model's deployments may bill. Admission reserves budget against
 * these because it cannot know in advance which deployment will serve the request.
 */
export function highestPricing(model: ModelEntry): ModelPricing {
  // Every deployment carries its effective price (the model's own unless overridden). Each price is
  // the highest of any deployment, the optional ones only when some deployment sets them.
  const highest: ModelPricing = { promptUsdPerMillion: 0, completionUsdPerMillion: 0 };
  for (const { pricing } of model.deployments) {
    for (const field of pricingFields) {
      const value = pricing[field];
      if (value !== undefined) highest[field] = Math.max(highest[field] ?? 0, value);
    }
  }
  return highest;
}
