import type { Catalog, ModelEntry } from '../shared/catalog/catalog-types.js';
import { GatewayError, type ErrorCode } from '../shared/errors.js';
import type { AttemptRecord, CompletionJob } from '../shared/job.js';
import { adapterFor } from '../shared/providers/adapter-registry.js';
import { fallbackableKinds, type UpstreamFailure } from '../shared/providers/provider-adapter.js';
import type { JobControl } from '../shared/transport/transport.js';
import type { ProviderClient } from './provider-client.js';
import { runAttempt, type AttemptResult } from './target-attempt.js';

// The retry policy of the gateway: the requested model, then each fallback in order, moving on
// only on failures that another target may not share (rate limits, server errors, connection
// failures, time-outs) and only while nothing has reached the client.

export interface ChainOutcome {
  attempts: AttemptRecord[];
  /** The target whose output the client received (and that is billed), if any. */
  servedModel?: ModelEntry;
  result?: AttemptResult;
  error?: GatewayError;
}

const failureLabels: Record<UpstreamFailure['kind'], string> = {
  rate_limit: 'rate limited',
  overloaded: 'overloaded',
  server_error: 'server error',
  timeout: 'timed out',
  connection: 'connection failed',
  bad_request: 'rejected the request',
  auth: 'refused the gateway credentials',
  not_found: 'does not know the model',
  cancelled: 'cancelled',
};

function describeAttempt(attempt: AttemptRecord): string {
  const status = attempt.status ? ` ${attempt.status}` : '';
  return `${attempt.model}: ${attempt.outcome === 'not_configured' ? 'provider not configured' : failureLabels[attempt.outcome as UpstreamFailure['kind']] ?? attempt.outcome}${status}${attempt.message ? ` (${attempt.message})` : ''}`;
}

function finalError(attempts: AttemptRecord[], last: UpstreamFailure | undefined, retryAfter: number | undefined): GatewayError {
  const summary = attempts.length === 1 ? `The model ${describeAttempt(attempts[0]!)}` : `All ${attempts.length} targets failed: ${attempts.map(describeAttempt).join('; ')}`;
  if (!last) return new GatewayError('provider_not_configured', `${summary}. Set the provider's API key in the gateway's environment.`);
  const codes: Partial<Record<UpstreamFailure['kind'], ErrorCode>> = { rate_limit: 'upstream_rate_limited', timeout: 'upstream_timeout', bad_request: 'upstream_bad_request' };
  return new GatewayError(codes[last.kind] ?? 'upstream_error', summary, { retryAfterSeconds: last.kind === 'rate_limit' ? retryAfter : undefined });
}

export async function runFallbackChain(job: CompletionJob, control: JobControl, catalog: Catalog, client: ProviderClient): Promise<ChainOutcome> {
  const attempts: AttemptRecord[] = [];
  let lastFailure: UpstreamFailure | undefined;
  let shortestRetryAfter: number | undefined;
  for (const modelId of job.targets) {
    if (control.signal.aborted) break;
    const model = catalog.models.get(modelId);
    const provider = model && catalog.providers.get(model.provider);
    if (!model || !provider) {
      attempts.push({ model: modelId, provider: model?.provider ?? 'unknown', outcome: 'not_found', message: 'not in this worker\'s catalog', latencyMs: 0 });
      continue;
    }
    if (!provider.apiKey && provider.apiKeyVariable) {
      attempts.push({ model: modelId, provider: provider.name, outcome: 'not_configured', message: `${provider.apiKeyVariable} is not set`, latencyMs: 0 });
      continue;
    }
    const startedAt = performance.now();
    const result = await runAttempt({ request: job.request, stream: job.stream, model, provider, adapter: adapterFor(provider.api), client, control });
    const latencyMs = Math.round(performance.now() - startedAt);
    if (result.ok) {
      attempts.push({ model: modelId, provider: provider.name, outcome: 'success', latencyMs });
      return { attempts, servedModel: model, result };
    }
    const { failure } = result;
    attempts.push({
      model: modelId,
      provider: provider.name,
      outcome: result.started && failure.kind !== 'cancelled' ? 'error_after_first_token' : failure.kind,
      status: failure.status,
      message: failure.message,
      latencyMs,
    });
    if (result.started) {
      const code: ErrorCode = failure.kind === 'timeout' ? 'upstream_timeout' : 'upstream_error';
      return { attempts, servedModel: model, result, error: new GatewayError(code, `The model ${modelId} failed after the response began: ${failure.message}`) };
    }
    if (failure.kind === 'cancelled') return { attempts, result };
    lastFailure = failure;
    if (failure.retryAfterSeconds !== undefined) shortestRetryAfter = Math.min(shortestRetryAfter ?? Infinity, failure.retryAfterSeconds);
    if (!fallbackableKinds.has(failure.kind) && failure.kind !== 'auth' && failure.kind !== 'not_found') {
      return { attempts, result, error: new GatewayError('upstream_bad_request', `The model ${modelId} rejected the request: ${failure.message}`) };
    }
  }
  if (control.signal.aborted) return { attempts };
  return { attempts, error: finalError(attempts, lastFailure, shortestRetryAfter) };
}
