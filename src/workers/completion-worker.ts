import type { Logger } from 'pino';
import type { AlertMonitor } from '../shared/alerts/alert-monitor.js';
import type { Catalog } from '../shared/catalog/catalog-types.js';
import type { Counters } from '../shared/counters/counters.js';
import { describeError } from '../shared/errors.js';
import type { CompletionJob } from '../shared/job.js';
import type { Store } from '../shared/store/store.js';
import { countPromptTokens, countTextTokens } from '../shared/token-counter.js';
import type { JobControl, JobHandler } from '../shared/transport/transport.js';
import { nanosToUsd } from '../shared/pricing.js';
import { makeUsage, type Usage } from '../shared/usage.js';
import { recordUsage, watchDeploymentHealth } from '../shared/observability/metrics.js';
import { DeploymentHealth } from './deployment-health.js';
import { runFallbackChain, type ChainOutcome } from './fallback-chain.js';
import { createJobSettler, ledgerEntry } from './job-settlement.js';
import { refusedBeforeStart } from './key-gate.js';
import type { PayloadRecorder } from './payload-recorder.js';
import type { ProviderClient } from './provider-client.js';

export interface CompletionWorkerDependencies {
  catalog: Catalog;
  client: ProviderClient;
  store: Store;
  counters: Counters;
  logger: Logger;
  workerId: string;
  /** Budget alerts, checked after a job of an alerting key is settled. */
  alerts?: AlertMonitor;
  /** Opt-in request logs (absent: none are kept). */
  payloads?: PayloadRecorder;
}

/** Provider usage when reported; otherwise a tokenizer count, marked estimated (never zero). */
function usageOf(job: CompletionJob, outcome: ChainOutcome): Usage {
  const reported = outcome.result?.usage;
  if (reported) return reported;
  const completionText = outcome.result?.completionText ?? '';
  return makeUsage(countPromptTokens(job.request, 'estimate'), countTextTokens(completionText), true);
}

function ledgerStatus(outcome: ChainOutcome, cancelled: boolean): number {
  if (cancelled) return 499;
  return outcome.error ? outcome.error.status : 200;
}

export function createCompletionHandler(dependencies: CompletionWorkerDependencies): JobHandler<CompletionJob> {
  const { catalog, client, store, counters, logger, workerId } = dependencies;
  // One per worker process: every job it runs learns from, and steers by, the same deployment health.
  const health = new DeploymentHealth({ logger });
  watchDeploymentHealth(health);
  const settleJob = createJobSettler({ counters, store, logger, alerts: dependencies.alerts });

  return async (job: CompletionJob, control: JobControl) => {
    control.publish({ type: 'accepted', worker: workerId });
    if (await refusedBeforeStart(counters, job, control, logger)) return;
    let outcome: ChainOutcome;
    try {
      outcome = await runFallbackChain(job, control, catalog, client, { health, logger });
    } catch (error) {
      logger.error({ err: error, jobId: job.id }, 'completion job crashed');
      outcome = { attempts: [], error: undefined };
      control.publish({ type: 'failed', error: { code: 'internal_error', message: 'The gateway failed while running this request.' }, started: false });
      await settle(job, outcome, undefined, 500);
      return;
    }
    const cancelled = control.signal.aborted && !outcome.error;
    const billed = outcome.servedModel ? usageOf(job, outcome) : undefined;

    // The ledger is written before the final event so that spend is visible once the client has its answer.
    await settle(job, outcome, billed, ledgerStatus(outcome, cancelled));

    if (outcome.error) {
      control.publish({ type: 'failed', error: describeError(outcome.error), started: outcome.result?.ok === false && outcome.result.started });
    } else if (outcome.result?.ok && outcome.servedModel && billed) {
      if (job.stream) {
        control.publish({ type: 'finished', model: outcome.servedModel.id, usage: billed });
      } else {
        control.publish({ type: 'completed', model: outcome.servedModel.id, choices: outcome.result.choices ?? [], usage: billed, systemFingerprint: outcome.result.systemFingerprint });
      }
    }
    await control.flush();
    // After the answer has left: request logs never delay a client.
    if (dependencies.payloads) {
      const result = outcome.result?.ok ? outcome.result : undefined;
      await dependencies.payloads.record(job, {
        status: ledgerStatus(outcome, cancelled),
        model: outcome.servedModel?.id ?? null,
        ...(job.stream ? { text: result?.completionText ?? '' } : { choices: result?.choices ?? [] }),
        usage: billed ?? null,
        error: outcome.error ? describeError(outcome.error) : null,
        attempts: outcome.attempts,
      });
    }
    logger.info(
      { jobId: job.id, keyId: job.keyId, model: job.targets[0], served: outcome.servedModel?.id, attempts: outcome.attempts.map((attempt) => `${attempt.model}${attempt.deployment ? `@${attempt.deployment}` : ''}:${attempt.outcome}`), cancelled },
      'completion finished',
    );
  };

  /** Settles the job and gives its usage the ledger's cost, so the answer shows what was billed. */
  async function settle(job: CompletionJob, outcome: ChainOutcome, usage: Usage | undefined, status: number): Promise<void> {
    const entry = ledgerEntry(job, outcome, usage, status);
    if (usage && outcome.servedModel) recordUsage(outcome.servedModel.id, usage, entry.costNanos);
    await settleJob(job, entry, usage ? usage.prompt_tokens + usage.completion_tokens : 0);
    if (usage) usage.cost = nanosToUsd(entry.costNanos);
  }
}
