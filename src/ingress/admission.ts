import { highestPricing, type ModelEntry } from '../shared/catalog/catalog-types.js';
import type { Counters, RateLimitState } from '../shared/counters/counters.js';
import { GatewayError, invalidApiKey } from '../shared/errors.js';
import type { InternalRequest } from '../shared/internal/request.js';
import { costNanos, usdToNanos } from '../shared/pricing.js';
import type { ProjectCharge } from '../shared/counters/counters.js';
import type { KeyRecord, ProjectRecord } from '../shared/store/store.js';
import { projectAdmission, projectCharge, projectNeedsTokens, projectRefusal } from './project-admission.js';
import { countPromptTokens } from '../shared/token-counter.js';

// Admission before a request goes upstream: revocation, rate limits and a budget reservation of
// the request's worst-case cost, in one call to the counters (one Redis round trip when scaled out).
// The worst case is the prompt (counted with the tokenizer) plus max_tokens, or the model's output
// limit when the request sets none, times n, at the dearest model (and deployment) of the chain;
// the worker settles it to the real cost. Refusals: 402 insufficient_quota / budget_exceeded, and
// 429 rate_limit_error / rate_limit_exceeded with retry-after (left out only when waiting cannot
// help). Every answer after admission carries the x-ratelimit-* headers of the key's limits.

export interface AdmittedRequest {
  reservationId: string;
  reservedNanos: number;
  headers: Array<[string, string]>;
  /** The key's project, reserved against too: the job settles at both levels. */
  project?: ProjectCharge;
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
function outputCeiling(request: InternalRequest, model: ModelEntry): number {
  const asked = request.maxOutputTokens;
  return asked ? Math.min(asked, model.maxOutputTokens) : model.maxOutputTokens;
}

export async function admitRequest(counters: Counters, key: KeyRecord, request: InternalRequest, targets: ModelEntry[], requestId: string, project: ProjectRecord | null = null): Promise<AdmittedRequest> {
  const needsTokens = key.tpm !== null || key.budgetUsd !== null || projectNeedsTokens(project);
  const promptTokens = needsTokens ? countPromptTokens(request) : 0;
  const choices = request.n;
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
    ...projectAdmission(project),
  });
  const headers = rateLimitHeaders(admission.rateLimit);
  if (admission.ok) return { reservationId: admission.reservationId, reservedNanos: reserveNanos, headers, project: projectCharge(project) };
  if (admission.reason === 'revoked') throw invalidApiKey();
  if (admission.level === 'project' && project) throw projectRefusal(project, admission, { reserveNanos, tokens }, headers, usd);
  const retryAfterSeconds = admission.retryAfterSeconds;
  if (admission.reason === 'budget_exceeded') {
    const period = key.budgetPeriod === 'none' ? 'total' : key.budgetPeriod;
    const ceiling = request.maxOutputTokens !== undefined ? 'max_tokens' : "the model's output limit";
    let next = 'Lower max_tokens or raise the budget.';
    if (retryAfterSeconds === IN_FLIGHT_RETRY_SECONDS) next = 'Requests in flight will release what they do not spend within seconds.';
    else if (retryAfterSeconds !== undefined) next = `The budget starts afresh at ${new Date(Date.now() + retryAfterSeconds * 1000).toISOString().replace(/:\d\d\.\d+Z$/, 'Z').replace(/T00:00Z$/, ' 00:00 UTC')}.`;
    throw new GatewayError(
      'budget_exceeded',
      `This request could cost up to ${usd(reserveNanos)} (prompt plus ${ceiling}${choices > 1 ? `, times n = ${choices}` : ''}, at the dearest model it may use), more than is left of this key's ${period} budget of ${usd(usdToNanos(key.budgetUsd ?? 0))} once spent and in-flight requests are counted. ${next}`,
      { headers, retryAfterSeconds },
    );
  }
  let message: string;
  if (admission.reason === 'concurrency') {
    message = `This key has reached its limit of ${key.maxConcurrent} concurrent requests.`;
  } else if (key.rpm !== null && admission.rateLimit.remainingRequests === 0) {
    message = `This key has reached its limit of ${key.rpm} requests per minute.`;
  } else if (retryAfterSeconds === undefined) {
    message = `This request needs up to ${tokens} tokens (prompt plus max_tokens${choices > 1 ? ', times n' : ''}), more than this key's limit of ${key.tpm} tokens per minute allows; lower max_tokens.`;
  } else {
    message = `This request needs up to ${tokens} tokens (prompt plus max_tokens${choices > 1 ? ', times n' : ''}); this key has ${admission.rateLimit.remainingTokens ?? 0} of its ${key.tpm} tokens per minute left.`;
  }
  // No retry-after when waiting cannot help (the request alone exceeds the limit).
  throw new GatewayError('rate_limit_exceeded', retryAfterSeconds === undefined ? message : `${message} Try again in ${retryAfterSeconds} s.`, { retryAfterSeconds, headers });
}

/** The counters' hint when only in-flight reservations stand in the way (IN_FLIGHT_RETRY_MS). */
const IN_FLIGHT_RETRY_SECONDS = 1;

/** Nano-USD as dollars, exact and without trailing zeros past the cents. */
function usd(nanos: number): string {
  const text = (nanos / 1e9).toFixed(9).replace(/0+$/, '');
  const [whole, fraction = ''] = text.split('.');
  return `$${whole}.${fraction.padEnd(2, '0')}`;
}
