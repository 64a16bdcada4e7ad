import { highestPricing, type ModelEntry } from '../shared/catalog/catalog-types.js';
import type { InternalRequest } from '../shared/internal/request.js';
import { worstCaseCostNanos, worstInputPrice, worstOutputPrice } from '../shared/pricing.js';

// Budgets that clamp: when a request's worst case does not fit what is left of its budget, the
// gateway lowers the request's output ceiling (max_tokens) to what the budget affords instead of
// refusing it, down to a minimum output (SWITCHBOARD_MIN_OUTPUT_TOKENS, 16 by default).
//
// The counters alone know what is left (spend and in-flight reservations, across every ingress),
// and asking them is an atomic admission that either reserves or changes nothing. So the ceiling is
// found by admissions: the full ceiling first (the common case, one call), then the largest ceiling
// the key's budget could afford at all, then halving until the counters accept one or the minimum
// is refused. Each accepted admission is the reservation of the request as it will be served, so
// "no overspend" holds as before, whatever the fallbacks, n or concurrent requests.

export const DEFAULT_MIN_OUTPUT_TOKENS = 16;

/** Anthropic's smallest thinking budget; max_tokens must be above the budget. */
const MIN_THINKING_BUDGET = 1024;

/** The smallest ceiling a request may be clamped to: the configured minimum, or more when it thinks with a budget. */
export function minimumCeiling(request: InternalRequest, configured: number): number {
  const thinking = request.reasoning?.mode === 'enabled' && request.reasoning.budgetTokens !== undefined;
  return thinking ? Math.max(configured, MIN_THINKING_BUDGET + 1) : configured;
}

/** Lowers a thinking budget that the clamped ceiling no longer leaves room for (budget_tokens < max_tokens). */
export function fitThinkingBudget(request: InternalRequest, ceiling: number): void {
  const budget = request.reasoning?.budgetTokens;
  if (!request.reasoning || budget === undefined || budget < ceiling) return;
  request.reasoning = { ...request.reasoning, budgetTokens: ceiling - 1 };
  // An Anthropic client's own thinking field goes to Anthropic targets as sent: lower it there too.
  const thinking = request.extras?.anthropic?.thinking;
  if (thinking && typeof thinking === 'object') request.extras!.anthropic = { ...request.extras!.anthropic, thinking: { ...thinking, budget_tokens: ceiling - 1 } };
}

export interface Reservation {
  /** The output ceiling this reservation covers, per choice, before each model's own limit. */
  ceiling: number;
  reserveNanos: number;
  tokens: number;
}

/** The ceiling a target may spend: the request's, capped by the model's own limit. */
export function targetCeiling(ceiling: number, model: ModelEntry): number {
  return Math.min(ceiling, model.maxOutputTokens);
}

/** What the request reserves with this output ceiling: the dearest target of the chain, times n. */
export function reservationFor(targets: ModelEntry[], promptTokens: number, choices: number, ceiling: number): Reservation {
  let reserveNanos = 0;
  let tokens = 0;
  for (const model of targets) {
    const output = targetCeiling(ceiling, model);
    reserveNanos = Math.max(reserveNanos, worstCaseCostNanos(highestPricing(model), promptTokens * choices, output * choices));
    tokens = Math.max(tokens, (promptTokens + output) * choices);
  }
  return { ceiling, reserveNanos, tokens };
}

/** The largest ceiling whose worst case fits in `nanos` on every target; 0 when the prompt alone does not fit. */
export function affordableCeiling(targets: ModelEntry[], promptTokens: number, choices: number, nanos: number): number {
  let ceiling = Number.MAX_SAFE_INTEGER;
  for (const model of targets) {
    const pricing = highestPricing(model);
    const left = nanos / 1000 - promptTokens * choices * worstInputPrice(pricing);
    const outputPrice = worstOutputPrice(pricing);
    if (left < 0) return 0;
    if (outputPrice > 0) ceiling = Math.min(ceiling, Math.floor(left / (outputPrice * choices)));
  }
  return Math.max(0, ceiling);
}

/**
 * The ceilings to try after the full one was refused for its budget, largest first: from the most
 * the budget could afford (below the full ceiling), halving, and the minimum last.
 */
export function clampCandidates(full: number, minimum: number, affordable: number): number[] {
  const floor = Math.min(minimum, full);
  const candidates: number[] = [];
  let ceiling = Math.min(full - 1, affordable);
  while (ceiling > floor) {
    candidates.push(ceiling);
    ceiling = Math.floor(ceiling / 2);
  }
  if (floor < full && floor <= affordable) candidates.push(floor);
  return candidates;
}
