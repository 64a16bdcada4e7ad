import type { ModelPricing } from './catalog/catalog-types.js';
import { usageSplit, type Usage } from './usage.js';

// Money is counted in integer nano-USD (1e-9 USD) so that sums over millions of ledger rows stay
// exact; a price of $0.075 per million tokens is 75 nano-USD per thousand tokens, so per-token
// prices keep three decimals of nano-USD and are rounded once per request.
//
// A request's cost (README, "Cost"):
//   uncached input x input price + cache reads x read price + 5-minute cache writes x write price
//   + 1-hour cache writes x 1-hour write price + (output - reasoning) x output price
//   + reasoning x reasoning price.
// A price the catalog leaves out falls back as documented: cache reads and writes at the input
// price (providers that publish no cache price), 1-hour writes at the write price, reasoning at
// the output price.

export function cacheReadPrice(pricing: ModelPricing): number {
  return pricing.cacheReadUsdPerMillion ?? pricing.promptUsdPerMillion;
}
export function cacheWritePrice(pricing: ModelPricing): number {
  return pricing.cacheWriteUsdPerMillion ?? pricing.promptUsdPerMillion;
}
export function cacheWrite1hPrice(pricing: ModelPricing): number {
  return pricing.cacheWrite1hUsdPerMillion ?? cacheWritePrice(pricing);
}
export function reasoningPrice(pricing: ModelPricing): number {
  return pricing.reasoningUsdPerMillion ?? pricing.completionUsdPerMillion;
}

/** Tokens billed at flat input and output prices (estimates, embeddings). */
export function costNanos(pricing: ModelPricing, promptTokens: number, completionTokens: number): number {
  return Math.round(promptTokens * pricing.promptUsdPerMillion * 1000 + completionTokens * pricing.completionUsdPerMillion * 1000);
}

/** The cost of a usage as the provider reported it, with its cache and reasoning split. */
export function usageCostNanos(pricing: ModelPricing, usage: Usage): number {
  const split = usageSplit(usage);
  const uncached = usage.prompt_tokens - split.cacheReadTokens - split.cacheWriteTokens;
  const writes5m = split.cacheWriteTokens - split.cacheWrite1hTokens;
  const output = usage.completion_tokens - split.reasoningTokens;
  const perMillion =
    uncached * pricing.promptUsdPerMillion +
    split.cacheReadTokens * cacheReadPrice(pricing) +
    writes5m * cacheWritePrice(pricing) +
    split.cacheWrite1hTokens * cacheWrite1hPrice(pricing) +
    output * pricing.completionUsdPerMillion +
    split.reasoningTokens * reasoningPrice(pricing);
  return Math.round(perMillion * 1000);
}

/** The dearest price an input token may bill (a 1-hour cache write costs twice the input price at Anthropic). */
export function worstInputPrice(pricing: ModelPricing): number {
  return Math.max(pricing.promptUsdPerMillion, cacheReadPrice(pricing), cacheWritePrice(pricing), cacheWrite1hPrice(pricing));
}

/** The dearest price an output token may bill. */
export function worstOutputPrice(pricing: ModelPricing): number {
  return Math.max(pricing.completionUsdPerMillion, reasoningPrice(pricing));
}

/** An upper bound of what prompt and output tokens may cost, whatever part of them is cached or reasoning. */
export function worstCaseCostNanos(pricing: ModelPricing, promptTokens: number, completionTokens: number): number {
  // Rounded like usageCostNanos: rounding is monotonic, so a larger sum never rounds below a smaller one.
  return Math.round(promptTokens * worstInputPrice(pricing) * 1000 + completionTokens * worstOutputPrice(pricing) * 1000);
}

export function nanosToUsd(nanos: number): number {
  return nanos / 1e9;
}

export function usdToNanos(usd: number): number {
  return Math.round(usd * 1e9);
}

/** USD per token as a decimal string without exponent notation (OpenRouter's catalog convention). */
export function usdPerTokenString(usdPerMillion: number): string {
  if (usdPerMillion === 0) return '0';
  return (usdPerMillion / 1e6).toFixed(12).replace(/0+$/, '').replace(/\.$/, '');
}
