import type { TestCatalogOptions } from './test-catalog.js';

// The test catalog's embedding models: on the OpenAI double (OpenAI format and Azure's deployment
// route, same server) and on the Gemini double when one runs. Prices are USD per million input tokens.

export const embeddingPrices: Record<string, number> = {
  'embed-alpha': 2,
  'embed-beta': 5,
  'embed-chained': 1,
  'embed-azure': 3,
  'embed-gemini': 4,
};

/** A catalog alias of svc/embed-alpha. */
export const embeddingAlias = 'house-embedder';

export function embeddingProviderLines(options: TestCatalogOptions): string[] {
  const origin = new URL(options.openAiUrl).origin;
  return [
    '  azure-double:',
    '    api: azure',
    `    base_url: ${origin}`,
    '    api_key: ${SB_TEST_UPSTREAM_KEY}',
    '    api_version: 2024-10-21',
    `    timeouts: { connect_ms: 1000, first_token_ms: ${options.firstTokenMs ?? 1500}, total_ms: ${options.totalMs ?? 6000} }`,
    '    cooldown_ms: 0',
  ];
}

export function embeddingModelLines(options: TestCatalogOptions): string[] {
  const lines: string[] = [];
  const model = (name: string, provider: string, extra: string[] = []) =>
    lines.push(`  - id: svc/${name}`, '    kind: embeddings', `    provider: ${provider}`, `    upstream_model: ${name}`, '    context_length: 8192', `    pricing: { prompt_usd_per_million: ${embeddingPrices[name]} }`, ...extra);
  model('embed-alpha', 'double', [`    aliases: [${embeddingAlias}]`]);
  model('embed-beta', 'double');
  model('embed-chained', 'double', ['    fallbacks: [svc/embed-beta]']);
  model('embed-azure', 'azure-double');
  if (options.geminiUrl) model('embed-gemini', 'gemini-double');
  return lines;
}
