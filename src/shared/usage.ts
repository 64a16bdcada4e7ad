export interface Usage {
  /** All input tokens, cached and cache-written ones included (OpenAI's convention). */
  prompt_tokens: number;
  /** All output tokens, reasoning included. */
  completion_tokens: number;
  total_tokens: number;
  /** True when a tokenizer counted the tokens because the provider reported none. */
  estimated?: boolean;
  /**
   * cached_tokens (cache reads), cache_creation_tokens (cache writes, all TTLs) and, from Anthropic,
   * cache_creation {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}: all subsets of prompt_tokens.
   */
  prompt_tokens_details?: Record<string, unknown>;
  /** reasoning_tokens: a subset of completion_tokens. */
  completion_tokens_details?: Record<string, unknown>;
  /** What the request cost, in USD: the ledger's cost (set by the worker that settled it). */
  cost?: number;
}

export function makeUsage(promptTokens: number, completionTokens: number, estimated = false): Usage {
  const usage: Usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  if (estimated) usage.estimated = true;
  return usage;
}

/** The billed split of a usage: each part a subset of prompt_tokens or completion_tokens. */
export interface UsageSplit {
  cacheReadTokens: number;
  /** Cache writes of every TTL (Anthropic's 5-minute and 1-hour writes together). */
  cacheWriteTokens: number;
  /** The 1-hour cache writes among cacheWriteTokens (Anthropic only). */
  cacheWrite1hTokens: number;
  reasoningTokens: number;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

export function usageSplit(usage: Usage): UsageSplit {
  const prompt = usage.prompt_tokens_details ?? {};
  const completion = usage.completion_tokens_details ?? {};
  const creation = prompt.cache_creation && typeof prompt.cache_creation === 'object' ? (prompt.cache_creation as Record<string, unknown>) : {};
  // Clamped so that a provider's inconsistent details can never price more tokens than it reported.
  const cacheReadTokens = Math.min(count(prompt.cached_tokens), usage.prompt_tokens);
  const cacheWriteTokens = Math.min(count(prompt.cache_creation_tokens), usage.prompt_tokens - cacheReadTokens);
  return {
    cacheReadTokens,
    cacheWriteTokens,
    cacheWrite1hTokens: Math.min(count(creation.ephemeral_1h_input_tokens), cacheWriteTokens),
    reasoningTokens: Math.min(count(completion.reasoning_tokens), usage.completion_tokens),
  };
}

/** Usage details as the provider-neutral fields of `usage`; only the parts that are present. */
export function withSplit(usage: Usage, split: UsageSplit): Usage {
  const prompt: Record<string, unknown> = { cached_tokens: split.cacheReadTokens };
  if (split.cacheWriteTokens > 0) prompt.cache_creation_tokens = split.cacheWriteTokens;
  if (split.cacheWrite1hTokens > 0) prompt.cache_creation = { ephemeral_5m_input_tokens: split.cacheWriteTokens - split.cacheWrite1hTokens, ephemeral_1h_input_tokens: split.cacheWrite1hTokens };
  const result: Usage = { ...usage };
  if (split.cacheReadTokens > 0 || split.cacheWriteTokens > 0) result.prompt_tokens_details = prompt;
  if (split.reasoningTokens > 0) result.completion_tokens_details = { reasoning_tokens: split.reasoningTokens };
  return result;
}
