import type { ModelEntry } from '../shared/catalog/catalog-types.js';
import type { Admission, Counters, RateLimitState } from '../shared/counters/counters.js';
import { GatewayError, invalidApiKey } from '../shared/errors.js';
import type { InternalRequest } from '../shared/internal/request.js';
import { usdToNanos } from '../shared/pricing.js';
import type { ProjectCharge } from '../shared/counters/counters.js';
import type { KeyRecord, ProjectRecord } from '../shared/store/store.js';
import { projectAdmission, projectCharge, projectNeedsTokens, projectRefusal } from './project-admission.js';
import { countPromptTokens } from '../shared/token-counter.js';
import { affordableCeiling, clampCandidates, DEFAULT_MIN_OUTPUT_TOKENS, fitThinkingBudget, minimumCeiling, reservationFor, type Reservation } from './output-clamp.js';

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

/** The output ceiling the request asks for: its max tokens, or the largest model limit of the chain. */
function askedCeiling(request: InternalRequest, targets: ModelEntry[]): number {
  return request.maxOutputTokens ?? Math.max(...targets.map((model) => model.maxOutputTokens));
}

export interface AdmissionOptions {
  /** Output tokens below which a budget no longer clamps a request but refuses it. */
  minOutputTokens?: number;
  /** The key's project: its limits are checked and reserved in the same atomic call. */
  project?: ProjectRecord | null;
}

/**
 * What is left to clamp against: the tighter of the key's budget and its project's (an all-time
 * budget's spend is on the key record, perhaps a moment old, so perhaps too high a figure: the
 * counters still decide; a period's starts from the whole budget). Null when neither has a budget.
 */
function budgetLeft(key: KeyRecord, project: ProjectRecord | null): number | null {
  let left: number | null = null;
  if (key.budgetUsd !== null) left = usdToNanos(key.budgetUsd) - (key.budgetPeriod === 'none' ? usdToNanos(key.spentUsd) : 0);
  if (project?.budgetUsd != null) left = Math.min(left ?? Infinity, usdToNanos(project.budgetUsd));
  return left === null ? null : Math.max(0, left);
}

/**
 * The one counters call of every surface: the key's revocation, rpm, tpm, concurrency and budget,
 * and its project's, with `tokens` counted against tpm and `reserveNanos` reserved.
 */
export function admitToCounters(counters: Counters, key: KeyRecord, project: ProjectRecord | null, requestId: string, tokens: number, reserveNanos: number): Promise<Admission> {
  return counters.admit({
    keyId: key.id,
    requestId,
    limits: { rpm: key.rpm, tpm: key.tpm, maxConcurrent: key.maxConcurrent, budgetNanos: key.budgetUsd === null ? null : usdToNanos(key.budgetUsd), budgetPeriod: key.budgetPeriod },
    tokens,
    reserveNanos,
    now: Date.now(),
    ...projectAdmission(project),
  });
}

/**
 * A refusal that reads the same whatever was sized: a revoked key, any project refusal, the key's
 * concurrency and requests per minute. Undefined for the key's budget and tokens per minute, whose
 * message says what the surface counted.
 */
export function sharedRefusal(admission: Extract<Admission, { ok: false }>, key: KeyRecord, project: ProjectRecord | null, sized: { reserveNanos: number; tokens: number }, headers: Array<[string, string]>): GatewayError | undefined {
  if (admission.reason === 'revoked') return invalidApiKey();
  if (admission.level === 'project' && project) return projectRefusal(project, admission, sized, headers, usd);
  if (admission.reason === 'budget_exceeded') return undefined;
  let message: string;
  if (admission.reason === 'concurrency') message = `This key has reached its limit of ${key.maxConcurrent} concurrent requests.`;
  else if (key.rpm !== null && admission.rateLimit.remainingRequests === 0) message = `This key has reached its limit of ${key.rpm} requests per minute.`;
  else return undefined;
  const { retryAfterSeconds } = admission;
  return new GatewayError('rate_limit_exceeded', retryAfterSeconds === undefined ? message : `${message} Try again in ${retryAfterSeconds} s.`, { retryAfterSeconds, headers });
}

/** A tokens-per-minute refusal; no retry-after when waiting cannot help (the request alone exceeds the limit). */
export function tokenRateRefusal(admission: Extract<Admission, { ok: false }>, exceedsAlone: string, waitForMore: string, headers: Array<[string, string]>): GatewayError {
  const { retryAfterSeconds } = admission;
  const message = retryAfterSeconds === undefined ? exceedsAlone : `${waitForMore} Try again in ${retryAfterSeconds} s.`;
  return new GatewayError('rate_limit_exceeded', message, { retryAfterSeconds, headers });
}

/** The response header that tells a client its max tokens was lowered to fit the budget. */
export const CLAMPED_HEADER = 'x-switchboard-max-tokens-clamped';

export async function admitRequest(counters: Counters, key: KeyRecord, request: InternalRequest, targets: ModelEntry[], requestId: string, options: AdmissionOptions = {}): Promise<AdmittedRequest> {
  const project = options.project ?? null;
  const needsTokens = key.tpm !== null || key.budgetUsd !== null || projectNeedsTokens(project);
  const promptTokens = needsTokens ? countPromptTokens(request) : 0;
  const choices = request.n;
  const full = askedCeiling(request, targets);
  const admit = (reservation: Reservation) => admitToCounters(counters, key, project, requestId, needsTokens ? reservation.tokens : 0, needsTokens ? reservation.reserveNanos : 0);
  let reservation = reservationFor(targets, promptTokens, choices, full);
  let admission = await admit(reservation);
  const left = budgetLeft(key, project);
  if (!admission.ok && admission.reason === 'budget_exceeded' && left !== null) {
    const affordable = affordableCeiling(targets, promptTokens, choices, left);
    for (const ceiling of clampCandidates(full, minimumCeiling(request, options.minOutputTokens ?? DEFAULT_MIN_OUTPUT_TOKENS), affordable)) {
      const lower = reservationFor(targets, promptTokens, choices, ceiling);
      const retry = await admit(lower);
      // The last refusal speaks for the request: its retry-after is the minimum's.
      admission = retry;
      if (retry.ok || retry.reason !== 'budget_exceeded') {
        if (retry.ok) {
          reservation = lower;
          // Every adapter sends this upstream as the provider's max tokens. One value serves every
          // target of the chain, so it must not exceed the smallest model limit when the client set
          // none (a lower ceiling than the budget affords on the larger ones, never a refused call).
          const smallest = Math.min(...targets.map((model) => model.maxOutputTokens));
          request.maxOutputTokens = request.maxOutputTokens === undefined ? Math.min(ceiling, smallest) : ceiling;
          reservation.ceiling = request.maxOutputTokens;
          fitThinkingBudget(request, request.maxOutputTokens);
        }
        break;
      }
    }
  }
  const reserveNanos = reservation.reserveNanos;
  const tokens = reservation.tokens;
  const headers = rateLimitHeaders(admission.rateLimit);
  if (admission.ok) {
    if (reservation.ceiling < full) headers.push([CLAMPED_HEADER, String(reservation.ceiling)]);
    return { reservationId: admission.reservationId, reservedNanos: needsTokens ? reserveNanos : 0, headers, project: projectCharge(project) };
  }
  const shared = sharedRefusal(admission, key, project, { reserveNanos, tokens }, headers);
  if (shared) throw shared;
  const retryAfterSeconds = admission.retryAfterSeconds;
  if (admission.reason === 'budget_exceeded') {
    const period = key.budgetPeriod === 'none' ? 'total' : key.budgetPeriod;
    const minimum = Math.min(minimumCeiling(request, options.minOutputTokens ?? DEFAULT_MIN_OUTPUT_TOKENS), full);
    const ceiling = minimum < full ? `the minimum output of ${minimum} tokens` : request.maxOutputTokens !== undefined ? 'max_tokens' : "the model's output limit";
    let next = minimum < full ? 'Raise the budget.' : 'Lower max_tokens or raise the budget.';
    if (admission.heldInFlight) next = 'Requests in flight will release what they do not spend within seconds.';
    else if (retryAfterSeconds !== undefined) next = `The budget starts afresh at ${new Date(Date.now() + retryAfterSeconds * 1000).toISOString().replace(/:\d\d\.\d+Z$/, 'Z').replace(/T00:00Z$/, ' 00:00 UTC')}.`;
    throw new GatewayError(
      'budget_exceeded',
      `This request could cost up to ${usd(reservationFor(targets, promptTokens, choices, minimum).reserveNanos)} (prompt plus ${ceiling}${choices > 1 ? `, times n = ${choices}` : ''}, at the dearest model it may use), more than is left of this key's ${period} budget of ${usd(usdToNanos(key.budgetUsd ?? 0))} once spent and in-flight requests are counted. ${next}`,
      { headers, retryAfterSeconds },
    );
  }
  const times = choices > 1 ? ', times n' : '';
  throw tokenRateRefusal(
    admission,
    `This request needs up to ${tokens} tokens (prompt plus max_tokens${times}), more than this key's limit of ${key.tpm} tokens per minute allows; lower max_tokens.`,
    `This request needs up to ${tokens} tokens (prompt plus max_tokens${times}); this key has ${admission.rateLimit.remainingTokens ?? 0} of its ${key.tpm} tokens per minute left.`,
    headers,
  );
}

/** Nano-USD as dollars, exact and without trailing zeros past the cents. */
export function usd(nanos: number): string {
  const text = (nanos / 1e9).toFixed(9).replace(/0+$/, '');
  const [whole, fraction = ''] = text.split('.');
  return `$${whole}.${fraction.padEnd(2, '0')}`;
}
