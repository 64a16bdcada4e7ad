export type ProviderApi = 'openai' | 'azure' | 'anthropic' | 'gemini';

export interface ProviderTimeouts {
  connectMs: number;
  firstTokenMs: number;
  totalMs: number;
}

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
}

export interface ModelPricing {
  promptUsdPerMillion: number;
  completionUsdPerMillion: number;
}

export interface ModelEntry {
  id: string;
  provider: string;
  upstreamModel: string;
  contextLength: number;
  maxOutputTokens: number;
  pricing: ModelPricing;
  ownedBy: string;
  created: number;
}

export interface Catalog {
  providers: Map<string, ProviderConfig>;
  models: Map<string, ModelEntry>;
}
