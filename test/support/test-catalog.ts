import { embeddingModelLines, embeddingProviderLines } from './embeddings-catalog.js';

// A catalog whose providers are the test doubles. Prices are round numbers so tests can compute
// exact costs; time-outs are short so hang cases finish quickly.

export interface TestCatalogOptions {
  openAiUrl: string;
  anthropicUrl?: string;
  geminiUrl?: string;
  /** A provider double that speaks the Responses API (svc/native). */
  responsesUrl?: string;
  firstTokenMs?: number;
  totalMs?: number;
  /** Cool-down of the load-balancing providers (lb-east, lb-west); default 300 ms. */
  balancingCooldownMs?: number;
  /** Catalog `aliases` of svc/<name>, keyed by <name> (e.g. `{ 'claude-test': ['claude-opus-4-8'] }`). */
  aliases?: Record<string, string[]>;
  /** Catalog `fallbacks` of svc/<name> (used when a request names none), keyed by <name>. */
  modelFallbacks?: Record<string, string[]>;
  /** Models served by the Anthropic double (svc/<name>, upstream <name>, $3 / $15); default ['claude-test']. */
  anthropicModels?: string[];
  /** Overrides of svc/<name>'s context_length and max_output_tokens (32768 and 1000 otherwise). */
  modelLimits?: Record<string, { contextLength?: number; maxOutputTokens?: number }>;
  /** Extra pricing fields of svc/<name> (e.g. `{ alpha: { cache_read_usd_per_million: 0.25 } }`). */
  extraPrices?: Record<string, Record<string, number>>;
}

/**
 * The model names Claude Code 2.1.197 sends (recorded in test/fixtures/claude-code): its default and
 * `--model opus` send claude-opus-4-8, `sonnet` claude-sonnet-5, `haiku` claude-haiku-4-5-20251001;
 * the rest are names its system prompt lists (claude-fable-5) or older releases a user may still pin.
 */
export const claudeCodeModelNames = ['claude-opus-4-8', 'claude-sonnet-5', 'claude-haiku-4-5-20251001', 'claude-fable-5', 'claude-sonnet-4-5-20250929', 'claude-opus-4-1-20250805'] as const;

/** Claude Code's output ceilings: max_tokens 64000 (opus, sonnet), 32000 (haiku and unknown names). */
export const claudeCodeLimits = { contextLength: 200_000, maxOutputTokens: 64_000 } as const;

/**
 * Models served by two deployments on the OpenAI double, on providers lb-east and lb-west; the
 * double's model name tells which deployment a request reached. svc/balanced splits evenly and
 * bills each deployment at its own price; svc/primary sends (almost) everything to east, so tests
 * know which deployment a request tries first.
 */
export const balancedPrices = { model: [2, 3], east: [1, 2], west: [3, 4] } as const;

export const testModels = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta'] as const;

/** USD per million tokens for svc/<name>: prompt, completion. */
export const testPrices: Record<string, [number, number]> = {
  alpha: [1, 2],
  beta: [3, 4],
  gamma: [5, 6],
  delta: [7, 8],
  epsilon: [9, 10],
  zeta: [11, 12],
  eta: [13, 14],
  nokey: [1, 1],
};

export function testCatalogYaml(options: TestCatalogOptions): string {
  const timeouts = `    timeouts: { connect_ms: 1000, first_token_ms: ${options.firstTokenMs ?? 1500}, total_ms: ${options.totalMs ?? 6000} }`;
  // The shared doubles never cool down: behaviour suites script one failure after another on the
  // same model and must see each of them. Cool-downs are tested on the lb-* providers.
  const noCooldown = '    cooldown_ms: 0';
  const lines = [
    'providers:',
    '  double:',
    '    api: openai',
    `    base_url: ${options.openAiUrl}`,
    '    api_key: ${SB_TEST_UPSTREAM_KEY}',
    timeouts,
    noCooldown,
    '  unconfigured:',
    '    api: openai',
    `    base_url: ${options.openAiUrl}`,
    '    api_key: ${SB_TEST_MISSING_KEY}',
  ];
  for (const side of ['east', 'west']) {
    lines.push(`  lb-${side}:`, '    api: openai', `    base_url: ${options.openAiUrl}`, '    api_key: ${SB_TEST_UPSTREAM_KEY}', timeouts);
    lines.push(`    cooldown_ms: ${options.balancingCooldownMs ?? 300}`, '    failures_before_cooldown: 3');
  }
  if (options.anthropicUrl) lines.push('  anthropic-double:', '    api: anthropic', `    base_url: ${options.anthropicUrl}`, '    api_key: test-anthropic-key', timeouts, noCooldown);
  if (options.responsesUrl) lines.push('  responses-double:', '    api: openai-responses', `    base_url: ${options.responsesUrl}`, '    api_key: test-responses-key', timeouts, noCooldown);
  if (options.geminiUrl) lines.push('  gemini-double:', '    api: gemini', `    base_url: ${options.geminiUrl}`, '    api_key: test-gemini-key', timeouts, noCooldown);
  lines.push(...embeddingProviderLines(options), 'models:', ...embeddingModelLines(options));
  // JSON strings are YAML flow scalars, so names such as `claude-opus-4-8[1m]` need no escaping rules.
  const list = (items: string[]) => `[${items.map((item) => JSON.stringify(item)).join(', ')}]`;
  const model = (id: string, provider: string, upstream: string, prices: [number, number]) => {
    const limits = options.modelLimits?.[id];
    lines.push(
      `  - id: svc/${id}`,
      `    provider: ${provider}`,
      `    upstream_model: ${upstream}`,
      `    context_length: ${limits?.contextLength ?? 32768}`,
      `    max_output_tokens: ${limits?.maxOutputTokens ?? 1000}`,
      `    pricing: { prompt_usd_per_million: ${prices[0]}, completion_usd_per_million: ${prices[1]}${Object.entries(options.extraPrices?.[id] ?? {}).map(([field, value]) => `, ${field}: ${value}`).join('')} }`,
    );
    // Only written when asked for, so catalogs of other tests stay as they were.
    const aliases = options.aliases?.[id];
    if (aliases) lines.push(`    aliases: ${list(aliases)}`);
    const fallbacks = options.modelFallbacks?.[id];
    if (fallbacks) lines.push(`    fallbacks: ${list(fallbacks)}`);
  };
  for (const name of testModels) model(name, 'double', name, testPrices[name]!);
  model('nokey', 'unconfigured', 'nokey', testPrices.nokey!);
  if (options.anthropicUrl) for (const name of options.anthropicModels ?? ['claude-test']) model(name, 'anthropic-double', name, [3, 15]);
  if (options.geminiUrl) model('gemini-test', 'gemini-double', 'gemini-test', [1, 4]);
  if (options.responsesUrl) model('native', 'responses-double', 'native-upstream', [2, 8]);
  const pricing = (prices: readonly [number, number]) => `{ prompt_usd_per_million: ${prices[0]}, completion_usd_per_million: ${prices[1]} }`;
  lines.push(
    '  - id: svc/balanced',
    '    context_length: 32768',
    '    max_output_tokens: 1000',
    `    pricing: ${pricing(balancedPrices.model)}`,
    '    deployments:',
    `      - { provider: lb-east, upstream_model: balanced-east, pricing: ${pricing(balancedPrices.east)} }`,
    `      - { provider: lb-west, upstream_model: balanced-west, pricing: ${pricing(balancedPrices.west)} }`,
    '  - id: svc/primary',
    '    context_length: 32768',
    '    max_output_tokens: 1000',
    `    pricing: ${pricing(balancedPrices.model)}`,
    '    deployments:',
    '      - { provider: lb-east, upstream_model: primary-east, weight: 1000000 }',
    '      - { provider: lb-west, upstream_model: primary-west, weight: 1 }',
  );
  return `${lines.join('\n')}\n`;
}
