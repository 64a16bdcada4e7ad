import { highestPricing, type ModelEntry } from '../shared/catalog/catalog-types.js';
import { choiceCount, type ChatRequest } from '../shared/chat-request-schema.js';
import type { Counters, RateLimitState } from '../shared/counters/counters.js';
import { GatewayError, invalidApiKey } from '../shared/errors.js';
import { costNanos, usdToNanos } from '../shared/pricing.js';
import type { KeyRecord } from '../shared/store/store.js';
import { countPromptTokens } from '../shared/token-counter.js';

// Admission before a request goes upstream: revocation, rate limits and a budget reservation of
// the request's worst-case cost, in one call to the counters (one Redis round trip when scaled out).

export interface AdmittedRequest {
  reservationId: string;
  reservedNanos: number;
  headers: Array<[string, string]>;
}

function duration(seconds: number): string {
  const whole = Math.max(0, Math.ceil(seconds));
  const minutes = Math.floor(whole / 60);
  return minutes > 0 ? `${minutes}m${whole % 60}s` : `${whole}s`;
}

export function rateLimitHeaders(state: RateLimitState): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  if (state.limitRequests !== null) {
    headers.push(['x-ratelimit-limit-requests', String(state.limitRequests)]);
    headers.push(['x-ratelimit-remaining-requests', String(Math.max(0, state.remainingRequests ?? 0))]);
    headers.push(['x-ratelimit-reset-requests', duration(state.resetRequestsSeconds ?? 0)]);
  }
  if (state.limitTokens !== null) {
    headers.push(['x-ratelimit-limit-tokens', String(state.limitTokens)]);
    headers.push(['x-ratelimit-remaining-tokens', String(Math.max(0, state.remainingTokens ?? 0))]);
    headers.push(['x-ratelimit-reset-tokens', duration(state.resetTokensSeconds ?? 0)]);
  }
  return headers;
}

/** The output ceiling a target may spend: the request's max tokens, capped by the model's own limit. */
function outputCeiling(request: ChatRequest, model: ModelEntry): number {
  const asked = request.max_completion_tokens ?? request.max_tokens;
  return asked ? Math.min(asked, model.maxOutputTokens) : model.maxOutputTokens;
}

export async function admitRequest(counters: Counters, key: KeyRecord, request: ChatRequest, targets: ModelEntry[], requestId: string): Promise<AdmittedRequest> {
  const needsTokens = key.tpm !== null || key.budgetUsd !== null;
  const promptTokens = needsTokens ? countPromptTokens(request) : 0;
  const choices = choiceCount(request);
  let reserveNanos = 0;
  let tokens = 0;
  if (needsTokens) {
    for (const model of targets) {
      const ceiling = outputCeiling(request, model);
      reserveNanos = Math.max(reserveNanos, costNanos(highestPricing(model), promptTokens * choices, ceiling * choices));
      tokens = Math.max(tokens, (promptTokens + ceiling) * choices);
    }
  }
  const admission = await counters.admit({
    keyId: key.id,
    requestId,
    limits: {
      rpm: key.rpm,
      tpm: key.tpm,
      maxConcurrent: key.maxConcurrent,
      budgetNanos: key.budgetUsd === null ? null : usdToNanos(key.budgetUsd),
      budgetPeriod: key.budgetPeriod,
    },
    tokens,
    reserveNanos,
    now: Date.now(),
  });
  const headers = rateLimitHeaders(admission.rateLimit);
  if (admission.ok) return { reservationId: admission.reservationId, reservedNanos: reserveNanos, headers };
  if (admission.reason === 'revoked') throw invalidApiKey();
  if (admission.reason === 'budget_exceeded') {
    throw new GatewayError('budget_exceeded', `This key's budget of $${key.budgetUsd} (${key.budgetPeriod === 'none' ? 'in total' : key.budgetPeriod}) cannot cover this request's maximum cost. Lower max_tokens or raise the budget.`, { headers });
  }
  const what = admission.reason === 'concurrency' ? `${key.maxConcurrent} concurrent requests` : 'its per-minute rate limit';
  throw new GatewayError('rate_limit_exceeded', `This key has reached ${what}. Try again in ${Math.ceil(admission.retryAfterSeconds ?? 1)} s.`, {
    retryAfterSeconds: admission.retryAfterSeconds ?? 1,
    headers,
  });
}
