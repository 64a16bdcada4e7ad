import type { Logger } from 'pino';
import type { Catalog, ModelDeployment, ModelEntry, ProviderConfig } from '../shared/catalog/catalog-types.js';
import { GatewayError, type ErrorCode } from '../shared/errors.js';
import type { AttemptRecord, CompletionJob } from '../shared/job.js';
import { adapterFor } from '../shared/providers/chat-adapter-registry.js';
import { fallbackableKinds, type UpstreamFailure } from '../shared/providers/chat-adapter.js';
import type { JobControl } from '../shared/transport/transport.js';
import { callsPerTry } from '../shared/providers/provider-call-limit.js';
import { failureDetail } from '../shared/providers/failure-messages.js';
import { recordAttempts } from '../shared/observability/metrics.js';
import { endAttempt, startAttempt } from './attempt-tracing.js';
import { runChoices } from './choice-fan-out.js';
import { ProviderCallBudget } from './provider-call-budget.js';
import type { AttemptVerdict, DeploymentHealth } from './deployment-health.js';
import { pickDeployment, soonestRecovery } from './deployment-picker.js';
import type { ProviderClient } from './provider-client.js';
import type { AttemptResult } from './target-attempt.js';

// The retry policy of the gateway: the requested model, then each fallback in order. Within a
// model, the deployments are tried one after another (see deployment-picker.ts for the order)
// before the next model is. The chain moves on only on failures that another deployment or target
// may not share (rate limits, server errors, connection failures, time-outs, refused credentials,
// an unknown upstream model) and only while nothing has reached the client.

export interface ChainOutcome<R extends ChainAttemptResult = AttemptResult> {
  attempts: AttemptRecord[];
  /** The target whose output the client received (and that is billed), priced as the deployment that served it. */
  servedModel?: ModelEntry;
  result?: R;
  error?: GatewayError;
}

/** What the chain needs to know of one call, whatever the job's kind (completion or embeddings). */
export type ChainAttemptResult = { ok: true; latencyMs: number } | { ok: false; failure: UpstreamFailure; started: boolean; gatewayError?: GatewayError };

export interface ChainTarget {
  model: ModelEntry;
  deployment: ModelDeployment;
  provider: ProviderConfig;
}

/** One try of one deployment of a target; the job's kind decides what is called and how. */
export interface ChainAttempt<R extends ChainAttemptResult> {
  /** Provider calls the try needs at least (counted against the cap per request). */
  calls(target: ChainTarget): number;
  run(target: ChainTarget, budget: ProviderCallBudget): Promise<R>;
  /** The GenAI operation name of the attempt spans (`chat` unless given). */
  operation?: string;
  /** A stream: a successful result's latencyMs is its time to first token, recorded as such. */
  streaming?: boolean;
}

export interface ChainRouting {
  /** The worker process's deployment health; shared by every job it runs. */
  health: DeploymentHealth;
  random?: () => number;
  /** Where each failed attempt's provider text goes, redacted and truncated. */
  logger?: Logger;
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
  internal: 'failed inside the gateway',
};

const otherLabels: Partial<Record<AttemptRecord['outcome'], string>> = { not_configured: 'provider not configured', cooling_down: 'cooling down' };

/**
 * One attempt as the client reads it. The ledger's record keeps the provider's own text (redacted
 * and truncated); `clientMessages` holds what a client may see of it (see failure-messages.ts).
 */
function describeAttempt(attempt: AttemptRecord, catalog: Catalog, clientMessages: Map<AttemptRecord, string>): string {
  const status = attempt.status ? ` ${attempt.status}` : '';
  const label = otherLabels[attempt.outcome] ?? failureLabels[attempt.outcome as UpstreamFailure['kind']] ?? attempt.outcome;
  // Which deployment failed only matters to the reader when the model has several.
  const via = attempt.deployment && (catalog.models.get(attempt.model)?.deployments.length ?? 0) > 1 ? ` via ${attempt.deployment}` : '';
  const message = clientMessages.get(attempt) ?? attempt.message;
  return `${attempt.model}${via}: ${label}${status}${message ? ` (${message})` : ''}`;
}

function finalError(attempts: AttemptRecord[], catalog: Catalog, clientMessages: Map<AttemptRecord, string>, last: UpstreamFailure | undefined, retryAfter: number | undefined, callCapNote: string): GatewayError {
  const describe = (attempt: AttemptRecord, position: number) => `${attempts.length > 1 ? `attempt ${position + 1}, ` : ''}${describeAttempt(attempt, catalog, clientMessages)}`;
  const summary = (attempts.length === 1 ? `The model ${describe(attempts[0]!, 0)}` : `All ${attempts.length} attempts failed: ${attempts.map(describe).join('; ')}`) + callCapNote;
  if (!last) return new GatewayError('provider_not_configured', `${summary}. Set the provider's API key in the gateway's environment.`);
  // An overloaded provider is a 503 (Anthropic clients see their 529), which clients retry.
  const codes: Partial<Record<UpstreamFailure['kind'], ErrorCode>> = { rate_limit: 'upstream_rate_limited', overloaded: 'upstream_unavailable', timeout: 'upstream_timeout', bad_request: 'upstream_bad_request' };
  return new GatewayError(codes[last.kind] ?? 'upstream_error', summary, { retryAfterSeconds: last.kind === 'rate_limit' || last.kind === 'overloaded' ? retryAfter : undefined });
}

function isConfigured(provider: ProviderConfig | undefined): provider is ProviderConfig {
  return provider !== undefined && !(!provider.apiKey && provider.apiKeyVariable);
}

function usableDeployments(catalog: Catalog, model: ModelEntry): ModelDeployment[] {
  return model.deployments.filter((deployment) => isConfigured(catalog.providers.get(deployment.provider)));
}

/** The model as billed: the deployment that served it sets provider, upstream name and price. */
function servedAs(model: ModelEntry, deployment: ModelDeployment): ModelEntry {
  return { ...model, provider: deployment.provider, upstreamModel: deployment.upstreamModel, pricing: deployment.pricing };
}

export function runFallbackChain(job: CompletionJob, control: JobControl, catalog: Catalog, client: ProviderClient, routing: ChainRouting): Promise<ChainOutcome> {
  return runTargetChain(job.id, job.targets, control, catalog, routing, {
    calls: ({ provider }) => callsPerTry(job.request, adapterFor(provider.api)),
    streaming: job.stream,
    run: ({ model, deployment, provider }, budget) =>
      runChoices({ request: job.request, stream: job.stream, model, deployment, provider, adapter: adapterFor(provider.api), client, control }, budget),
  });
}

/** The chain itself, for any kind of job; its attempts are counted in the metrics. */
export async function runTargetChain<R extends ChainAttemptResult>(jobId: string, targets: string[], control: JobControl, catalog: Catalog, routing: ChainRouting, attempt: ChainAttempt<R>): Promise<ChainOutcome<R>> {
  const outcome = await runChain(jobId, targets, control, catalog, routing, attempt);
  recordAttempts(outcome.attempts);
  return outcome;
}

async function runChain<R extends ChainAttemptResult>(jobId: string, targets: string[], control: JobControl, catalog: Catalog, routing: ChainRouting, attempt: ChainAttempt<R>): Promise<ChainOutcome<R>> {
  const { health } = routing;
  const attempts: AttemptRecord[] = [];
  const clientMessages = new Map<AttemptRecord, string>();
  const budget = new ProviderCallBudget();
  let callCapNote = '';
  let lastFailure: UpstreamFailure | undefined;
  let shortestRetryAfter: number | undefined;
  const noteFailure = (failure: UpstreamFailure) => {
    lastFailure = failure;
    if (failure.retryAfterSeconds !== undefined) shortestRetryAfter = Math.min(shortestRetryAfter ?? Infinity, failure.retryAfterSeconds);
  };

  chain: for (const [position, modelId] of targets.entries()) {
    if (control.signal.aborted) break;
    const model = catalog.models.get(modelId);
    if (!model) {
      attempts.push({ model: modelId, provider: 'unknown', outcome: 'not_found', message: 'not in this worker\'s catalog', latencyMs: 0 });
      continue;
    }
    const usable = usableDeployments(catalog, model);
    if (usable.length === 0) {
      const variables = [...new Set(model.deployments.map((deployment) => catalog.providers.get(deployment.provider)?.apiKeyVariable))].filter(Boolean);
      attempts.push({ model: modelId, provider: model.provider, outcome: 'not_configured', message: `${variables.join(' and ')} is not set`, latencyMs: 0 });
      continue;
    }
    // Cooling deployments are skipped while a later target could answer instead; on the last one
    // they are still tried, because a refusal of our own would only turn a possible answer into an error.
    const laterTargetCanServe = targets.slice(position + 1).some((id) => {
      const later = catalog.models.get(id);
      return later !== undefined && usableDeployments(catalog, later).length > 0;
    });
    const tried = new Set<string>();
    for (;;) {
      if (control.signal.aborted) break;
      const remaining = usable.filter((deployment) => !tried.has(deployment.id));
      const pick = pickDeployment(remaining, health, { allowCooling: !laterTargetCanServe, random: routing.random });
      if (!pick) {
        if (tried.size === 0) {
          const soonest = soonestRecovery(remaining, health);
          const retryAfterSeconds = Math.max(1, Math.ceil((soonest?.retryInMs ?? 1000) / 1000));
          const message = `every deployment is cooling down after failures; the first is tried again in ${retryAfterSeconds} s`;
          attempts.push({ model: modelId, provider: model.provider, deployment: remaining.map((deployment) => deployment.id).join(', '), outcome: 'cooling_down', message, latencyMs: 0 });
          noteFailure({ kind: soonest?.cause ?? 'overloaded', message, retryAfterSeconds });
        }
        break;
      }
      const { deployment } = pick;
      tried.add(deployment.id);
      const provider = catalog.providers.get(deployment.provider)!;
      const target = { model, deployment, provider };
      if (!budget.take(attempt.calls(target))) {
        // The cap on provider calls per request: what failed so far is the answer.
        health.report(deployment.id, provider.cooldown, undefined, pick.probe);
        callCapNote = `; stopped after ${budget.spent} provider calls, the most one request may make`;
        break chain;
      }
      const startedAt = performance.now();
      let result: R | undefined;
      let verdict: AttemptVerdict | undefined;
      const span = startAttempt(attempt.operation ?? 'chat', target);
      try {
        result = await attempt.run(target, budget);
        verdict = result.ok ? { kind: 'success', latencyMs: result.latencyMs } : { kind: 'failure', failure: result.failure };
      } finally {
        endAttempt(span, target, result);
        // Always reported, so a probe that ended in an exception does not hold the deployment forever.
        health.report(deployment.id, provider.cooldown, verdict, pick.probe);
      }
      const latencyMs = Math.round(performance.now() - startedAt);
      const record = { model: modelId, provider: provider.name, deployment: deployment.id, latencyMs };
      if (result.ok) {
        attempts.push(attempt.streaming ? { ...record, outcome: 'success', firstTokenMs: Math.round(result.latencyMs) } : { ...record, outcome: 'success' });
        return { attempts, servedModel: servedAs(model, deployment), result };
      }
      const { failure } = result;
      // The ledger keeps what the provider said (redacted, truncated); clients read failure.message.
      const detail = failureDetail(failure, [provider.apiKey]);
      const failed: AttemptRecord = {
        ...record,
        outcome: result.started && failure.kind !== 'cancelled' ? 'error_after_first_token' : failure.kind,
        status: failure.status,
        message: detail,
      };
      attempts.push(failed);
      clientMessages.set(failed, failure.message);
      routing.logger?.warn({ jobId, model: modelId, deployment: deployment.id, kind: failure.kind, status: failure.status, started: result.started, detail }, 'provider attempt failed');
      if (result.started) {
        // The client left mid-stream: no error to report; what was generated is still billed.
        if (failure.kind === 'cancelled') return { attempts, servedModel: servedAs(model, deployment), result };
        const code: ErrorCode = failure.kind === 'timeout' ? 'upstream_timeout' : 'upstream_error';
        return { attempts, servedModel: servedAs(model, deployment), result, error: new GatewayError(code, `The model ${modelId} failed after the response began: ${failure.message}`) };
      }
      if (failure.kind === 'cancelled') return { attempts, result };
      if (result.gatewayError) return { attempts, result, error: result.gatewayError };
      // Our own failure says nothing about the provider, and another target would fail the same way.
      if (failure.kind === 'internal') return { attempts, result, error: new GatewayError('internal_error', `The gateway failed while trying ${modelId} (attempt ${attempts.length}); the provider was not at fault. Details are in the gateway's logs.`) };
      noteFailure(failure);
      if (!fallbackableKinds.has(failure.kind) && failure.kind !== 'auth' && failure.kind !== 'not_found') {
        return { attempts, result, error: new GatewayError('upstream_bad_request', `The model ${modelId} rejected the request: ${failure.message}`) };
      }
    }
  }
  if (control.signal.aborted) return { attempts };
  return { attempts, error: finalError(attempts, catalog, clientMessages, lastFailure, shortestRetryAfter, callCapNote) };
}
