import type { CatalogFile } from './catalog-file-schema.js';

// Public list prices in USD per million tokens (standard tier, prompts under any long-context
// surcharge, no batch discounts), as published by each provider. Anthropic and Google are reached
// through their native APIs: their OpenAI-compatible endpoints are documented as partial
// (Anthropic's is meant for evaluation and ignores prompt caching). Keys come from the environment;
// a provider without one is listed but answers provider_not_configured.
//
// Cache prices, every model checked against its provider's pricing page:
// - OpenAI (https://platform.openai.com/docs/pricing, "Cached input" column): 10% of input for the
//   gpt-5 family, 25% for gpt-4.1 and o4-mini, 50% for gpt-4o. OpenAI charges nothing extra to
//   write its automatic cache, so writes bill at the input price (and are never reported).
// - Anthropic (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing): reads
//   0.1x input, 5-minute writes 1.25x, 1-hour writes 2x.
// - Google (https://ai.google.dev/gemini-api/docs/pricing, "Context caching price"): 10% of input
//   for 2.5 models (prompts up to 200k tokens); implicit caching has no write fee (input price).
// - DeepSeek (https://api-docs.deepseek.com/quick_start/pricing): cache hit $0.028, miss $0.28.
// - xAI (https://docs.x.ai/docs/models): cached input $0.75 for grok-4, $0.075 for grok-3-mini.
// - Groq, Together and Mistral publish no cache price for these models: cache reads bill at the
//   input price.
// Reasoning (thinking) tokens bill as output everywhere ("output price, including thinking tokens").

type Row = [id: string, provider: string, upstream: string, context: number, maxOutput: number, prompt: number, completion: number, cacheRead: number, cacheWrite: number, cacheWrite1h?: number];

const rows: Row[] = [
  ['svc/gpt-5', 'openai', 'gpt-5', 400_000, 128_000, 1.25, 10, 0.125, 1.25],
  ['svc/gpt-5-mini', 'openai', 'gpt-5-mini', 400_000, 128_000, 0.25, 2, 0.025, 0.25],
  ['svc/gpt-5-nano', 'openai', 'gpt-5-nano', 400_000, 128_000, 0.05, 0.4, 0.005, 0.05],
  ['svc/gpt-4.1', 'openai', 'gpt-4.1', 1_047_576, 32_768, 2, 8, 0.5, 2],
  ['svc/gpt-4.1-mini', 'openai', 'gpt-4.1-mini', 1_047_576, 32_768, 0.4, 1.6, 0.1, 0.4],
  ['svc/gpt-4o', 'openai', 'gpt-4o', 128_000, 16_384, 2.5, 10, 1.25, 2.5],
  ['svc/gpt-4o-mini', 'openai', 'gpt-4o-mini', 128_000, 16_384, 0.15, 0.6, 0.075, 0.15],
  ['svc/o4-mini', 'openai', 'o4-mini', 200_000, 100_000, 1.1, 4.4, 0.275, 1.1],
  ['svc/claude-opus-4-5', 'anthropic', 'claude-opus-4-5', 200_000, 64_000, 5, 25, 0.5, 6.25, 10],
  ['svc/claude-opus-4-1', 'anthropic', 'claude-opus-4-1', 200_000, 32_000, 15, 75, 1.5, 18.75, 30],
  ['svc/claude-sonnet-4-5', 'anthropic', 'claude-sonnet-4-5', 200_000, 64_000, 3, 15, 0.3, 3.75, 6],
  ['svc/claude-haiku-4-5', 'anthropic', 'claude-haiku-4-5', 200_000, 64_000, 1, 5, 0.1, 1.25, 2],
  ['svc/gemini-2.5-pro', 'google', 'gemini-2.5-pro', 1_048_576, 65_536, 1.25, 10, 0.125, 1.25],
  ['svc/gemini-2.5-flash', 'google', 'gemini-2.5-flash', 1_048_576, 65_536, 0.3, 2.5, 0.03, 0.3],
  ['svc/gemini-2.5-flash-lite', 'google', 'gemini-2.5-flash-lite', 1_048_576, 65_536, 0.1, 0.4, 0.01, 0.1],
  ['svc/llama-3.1-8b', 'groq', 'llama-3.1-8b-instant', 131_072, 131_072, 0.05, 0.08, 0.05, 0.05],
  ['svc/qwen-2.5-72b', 'together', 'Qwen/Qwen2.5-72B-Instruct-Turbo', 32_768, 8_192, 1.2, 1.2, 1.2, 1.2],
  ['svc/deepseek-v3', 'together', 'deepseek-ai/DeepSeek-V3', 131_072, 8_192, 1.25, 1.25, 1.25, 1.25],
  ['svc/deepseek-chat', 'deepseek', 'deepseek-chat', 128_000, 8_192, 0.28, 0.42, 0.028, 0.28],
  ['svc/deepseek-reasoner', 'deepseek', 'deepseek-reasoner', 128_000, 65_536, 0.28, 0.42, 0.028, 0.28],
  ['svc/mistral-large', 'mistral', 'mistral-large-latest', 131_072, 32_768, 2, 6, 2, 2],
  ['svc/mistral-small', 'mistral', 'mistral-small-latest', 131_072, 32_768, 0.1, 0.3, 0.1, 0.1],
  ['svc/grok-4', 'xai', 'grok-4', 256_000, 64_000, 3, 15, 0.75, 3],
  ['svc/grok-3-mini', 'xai', 'grok-3-mini', 131_072, 32_768, 0.3, 0.5, 0.075, 0.3],
];

/**
 * Names clients use unchanged (Claude Code and the SDKs send the provider's own model names, often
 * dated snapshots), so each first-party model also answers to them on every surface.
 */
const aliases: Record<string, string[]> = {
  'svc/claude-opus-4-5': ['claude-opus-4-5', 'claude-opus-4-5-20251101'],
  'svc/claude-opus-4-1': ['claude-opus-4-1', 'claude-opus-4-1-20250805'],
  'svc/claude-sonnet-4-5': ['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929'],
  'svc/claude-haiku-4-5': ['claude-haiku-4-5', 'claude-haiku-4-5-20251001'],
};

/** Every price spelled out, so no default model relies on a fallback (test/catalog-pricing.test.ts checks). */
const pricing = (prompt: number, completion: number, cacheRead = prompt, cacheWrite = prompt, cacheWrite1h?: number) => ({
  prompt_usd_per_million: prompt,
  completion_usd_per_million: completion,
  cache_read_usd_per_million: cacheRead,
  cache_write_usd_per_million: cacheWrite,
  ...(cacheWrite1h !== undefined ? { cache_write_1h_usd_per_million: cacheWrite1h } : {}),
  reasoning_usd_per_million: completion,
});

// Open-weight models hosted by more than one provider: traffic spreads over both, and one that rate
// limits or fails is skipped while the other serves. Each deployment bills its own provider's price.
const multiHosted: CatalogFile['models'] = [
  {
    id: 'svc/llama-3.3-70b',
    context_length: 131_072,
    max_output_tokens: 32_768,
    pricing: pricing(0.59, 0.79),
    owned_by: 'meta',
    deployments: [
      { provider: 'groq', upstream_model: 'llama-3.3-70b-versatile' },
      { provider: 'together', upstream_model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', pricing: pricing(0.88, 0.88) },
    ],
  },
  {
    id: 'svc/gpt-oss-120b',
    context_length: 131_072,
    max_output_tokens: 65_536,
    pricing: pricing(0.15, 0.75),
    owned_by: 'openai',
    deployments: [
      { provider: 'groq', upstream_model: 'openai/gpt-oss-120b' },
      { provider: 'together', upstream_model: 'openai/gpt-oss-120b', pricing: pricing(0.15, 0.6) },
    ],
  },
];

// Embedding models, billed per million input tokens. Prices and input limits as published on:
// OpenAI: https://platform.openai.com/docs/pricing (text-embedding-3-small $0.02, -3-large $0.13,
//   ada-002 $0.10; 8192 input tokens, per https://platform.openai.com/docs/guides/embeddings);
// Google: https://ai.google.dev/gemini-api/docs/pricing (gemini-embedding-001 $0.15; 2048 input
//   tokens, per https://ai.google.dev/gemini-api/docs/embeddings);
// Mistral: https://mistral.ai/pricing (mistral-embed $0.10; 8k context).
// Each also answers to the provider's own name, which embedding clients send unchanged.
type EmbeddingRow = [id: string, provider: string, upstream: string, maxInputTokens: number, usdPerMillionInput: number];

const embeddingRows: EmbeddingRow[] = [
  ['svc/text-embedding-3-small', 'openai', 'text-embedding-3-small', 8192, 0.02],
  ['svc/text-embedding-3-large', 'openai', 'text-embedding-3-large', 8192, 0.13],
  ['svc/text-embedding-ada-002', 'openai', 'text-embedding-ada-002', 8192, 0.1],
  ['svc/gemini-embedding-001', 'google', 'gemini-embedding-001', 2048, 0.15],
  ['svc/mistral-embed', 'mistral', 'mistral-embed', 8192, 0.1],
];

const embeddingModels: CatalogFile['models'] = embeddingRows.map(([id, provider, upstream, maxInput, price]) => ({
  id,
  kind: 'embeddings',
  provider,
  upstream_model: upstream,
  context_length: maxInput,
  pricing: { prompt_usd_per_million: price },
  aliases: [upstream],
}));

export const defaultCatalogFile: CatalogFile = {
  providers: {
    // OpenAI serves the Responses API too: Responses clients reach it natively, others via Chat Completions.
    openai: { api: 'openai-responses', base_url: 'https://api.openai.com/v1', api_key: '${OPENAI_API_KEY}' },
    anthropic: { api: 'anthropic', base_url: 'https://api.anthropic.com/v1', api_key: '${ANTHROPIC_API_KEY}' },
    google: { api: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', api_key: '${GEMINI_API_KEY}' },
    groq: { api: 'openai', base_url: 'https://api.groq.com/openai/v1', api_key: '${GROQ_API_KEY}' },
    together: { api: 'openai', base_url: 'https://api.together.xyz/v1', api_key: '${TOGETHER_API_KEY}' },
    deepseek: { api: 'openai', base_url: 'https://api.deepseek.com/v1', api_key: '${DEEPSEEK_API_KEY}' },
    mistral: { api: 'openai', base_url: 'https://api.mistral.ai/v1', api_key: '${MISTRAL_API_KEY}' },
    xai: { api: 'openai', base_url: 'https://api.x.ai/v1', api_key: '${XAI_API_KEY}' },
  },
  models: [
    ...rows.map(([id, provider, upstream, context, maxOutput, prompt, completion, cacheRead, cacheWrite, cacheWrite1h]) => ({
      id,
      provider,
      upstream_model: upstream,
      context_length: context,
      max_output_tokens: maxOutput,
      pricing: pricing(prompt, completion, cacheRead, cacheWrite, cacheWrite1h),
      ...(aliases[id] ? { aliases: aliases[id] } : {}),
    })),
    ...multiHosted,
    ...embeddingModels,
  ],
};
