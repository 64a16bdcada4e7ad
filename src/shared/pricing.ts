import type { ModelPricing } from './catalog/catalog-types.js';

// Money is counted in integer nano-USD (1e-9 USD) so that sums over millions of ledger rows stay
// exact; a price of $0.075 per million tokens is 75 nano-USD per thousand tokens, so per-token
// prices keep three decimals of nano-USD and are rounded once per request.

export function costNanos(pricing: ModelPricing, promptTokens: number, completionTokens: number): number {
  return Math.round(promptTokens * pricing.promptUsdPerMillion * 1000 + completionTokens * pricing.completionUsdPerMillion * 1000);
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
