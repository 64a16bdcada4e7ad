import type { Usage } from '../../shared/usage.js';

// A non-streamed answer's cost as a header, beside usage.cost in its body, for clients and proxies
// that read headers only. Streams have sent their headers before the cost is known, so their cost
// is in the final usage chunk or event alone.

export const COST_HEADER = 'x-switchboard-cost-usd';

/** The cost as a plain decimal (no exponent), exact to the nano-USD the ledger counts in. */
export function usdDecimal(usd: number): string {
  return usd.toFixed(9).replace(/0+$/, '').replace(/\.$/, '');
}

export function costHeaders(usage: Usage | undefined): Array<[string, string]> {
  return usage?.cost === undefined ? [] : [[COST_HEADER, usdDecimal(usage.cost)]];
}
