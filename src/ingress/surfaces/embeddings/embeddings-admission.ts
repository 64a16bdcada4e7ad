import { highestPricing, type ModelEntry } from '../../../shared/catalog/catalog-types.js';
import type { Counters } from '../../../shared/counters/counters.js';
import { countEmbeddingTokens } from '../../../shared/embeddings/embeddings-tokens.js';
import type { EmbeddingsRequest } from '../../../shared/embeddings/embeddings-request.js';
import { GatewayError } from '../../../shared/errors.js';
import { costNanos, usdToNanos } from '../../../shared/pricing.js';
import type { KeyRecord, ProjectRecord } from '../../../shared/store/store.js';
import { projectCharge, projectNeedsTokens } from '../../project-admission.js';
import { admitToCounters, rateLimitHeaders, sharedRefusal, tokenRateRefusal, usd, type AdmittedRequest } from '../../admission.js';

// The same admission as chat (the same counters call: revocation, rpm, tpm, concurrency, budget), sized
// for embeddings: there is no output, so the tokens are the input's and the reservation is their
// cost at the dearest model (and deployment) of the chain. The worker settles it to the real cost.

export async function admitEmbeddings(counters: Counters, key: KeyRecord, request: EmbeddingsRequest, targets: ModelEntry[], requestId: string, project: ProjectRecord | null = null): Promise<AdmittedRequest> {
  const needsTokens = key.tpm !== null || key.budgetUsd !== null || projectNeedsTokens(project);
  const tokens = needsTokens ? countEmbeddingTokens(request) : 0;
  const reserveNanos = Math.max(0, ...targets.map((model) => costNanos(highestPricing(model), tokens, 0)));
  const admission = await admitToCounters(counters, key, project, requestId, tokens, reserveNanos);
  const headers = rateLimitHeaders(admission.rateLimit);
  if (admission.ok) return { reservationId: admission.reservationId, reservedNanos: reserveNanos, headers, project: projectCharge(project) };
  const shared = sharedRefusal(admission, key, project, { reserveNanos, tokens }, headers);
  if (shared) throw shared;
  const { retryAfterSeconds } = admission;
  if (admission.reason === 'budget_exceeded') {
    const period = key.budgetPeriod === 'none' ? 'total' : key.budgetPeriod;
    const next = retryAfterSeconds === undefined ? 'Send less input or raise the budget.' : `Try again in ${Math.ceil(retryAfterSeconds)} s.`;
    throw new GatewayError(
      'budget_exceeded',
      `This request could cost up to ${usd(reserveNanos)} (its ${tokens} input tokens at the dearest model it may use), more than is left of this key's ${period} budget of ${usd(usdToNanos(key.budgetUsd ?? 0))} once spent and in-flight requests are counted. ${next}`,
      { headers, retryAfterSeconds },
    );
  }
  throw tokenRateRefusal(
    admission,
    `This request has ${tokens} input tokens, more than this key's limit of ${key.tpm} tokens per minute allows; send less input per request.`,
    `This request has ${tokens} input tokens; this key has ${admission.rateLimit.remainingTokens ?? 0} of its ${key.tpm} tokens per minute left.`,
    headers,
  );
}
