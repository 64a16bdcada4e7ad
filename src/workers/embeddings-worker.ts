import type { Logger } from 'pino';
import type { Catalog } from '../shared/catalog/catalog-types.js';
import type { Counters } from '../shared/counters/counters.js';
import { toTransportForm } from '../shared/embeddings/embedding-encoding.js';
import { countEmbeddingTokens } from '../shared/embeddings/embeddings-tokens.js';
import { describeError } from '../shared/errors.js';
import type { EmbeddingsJob } from '../shared/job.js';
import type { Store } from '../shared/store/store.js';
import type { JobControl, JobHandler } from '../shared/transport/transport.js';
import { nanosToUsd } from '../shared/pricing.js';
import { makeUsage, type Usage } from '../shared/usage.js';
import { recordUsage, watchDeploymentHealth } from '../shared/observability/metrics.js';
import { DeploymentHealth } from './deployment-health.js';
import { runEmbeddingsAttempt, type EmbeddingsAttemptResult } from './embeddings-attempt.js';
import { createJobSettler, ledgerEntry } from './job-settlement.js';
import { refusedBeforeStart } from './key-gate.js';
import { runTargetChain, type ChainOutcome } from './fallback-chain.js';
import type { ProviderClient } from './provider-client.js';

// Runs embeddings jobs: the same fallback chain and deployment health rules as completions, one
// non-streamed call per attempt, then settlement and one `completed` event carrying the vectors
// in base64 (see embedding-encoding.ts); the ingress renders them as the client asked.

export interface EmbeddingsWorkerDependencies {
  catalog: Catalog;
  client: ProviderClient;
  store: Store;
  counters: Counters;
  logger: Logger;
  workerId: string;
}

export function createEmbeddingsHandler(dependencies: EmbeddingsWorkerDependencies): JobHandler<EmbeddingsJob> {
  const { catalog, client, counters, logger, workerId } = dependencies;
  const health = new DeploymentHealth({ logger });
  const settleJob = createJobSettler(dependencies);
  watchDeploymentHealth(health);
  /** Settles the job and gives its usage the ledger's cost, so the answer shows what was billed. */
  const settle = async (job: EmbeddingsJob, outcome: ChainOutcome<EmbeddingsAttemptResult>, usage: Usage | undefined, status: number) => {
    const entry = ledgerEntry(job, outcome, usage, status);
    if (usage && outcome.servedModel) recordUsage(outcome.servedModel.id, usage, entry.costNanos);
    await settleJob(job, entry, usage?.prompt_tokens ?? 0);
    if (usage) usage.cost = nanosToUsd(entry.costNanos);
  };

  return async (job: EmbeddingsJob, control: JobControl) => {
    control.publish({ type: 'accepted', worker: workerId });
    if (await refusedBeforeStart(counters, job, control, logger)) return;
    let outcome: ChainOutcome<EmbeddingsAttemptResult>;
    try {
      outcome = await runTargetChain(job.id, job.targets, control, catalog, { health, logger }, {
        calls: () => 1,
        operation: 'embeddings',
        run: ({ deployment, provider }) => runEmbeddingsAttempt({ request: job.request, deployment, provider, client, signal: control.signal }),
      });
    } catch (error) {
      logger.error({ err: error, jobId: job.id }, 'embeddings job crashed');
      control.publish({ type: 'failed', error: { code: 'internal_error', message: 'The gateway failed while running this request.' }, started: false });
      await settle(job, { attempts: [] }, undefined, 500);
      return;
    }
    const result = outcome.result?.ok ? outcome.result : undefined;
    const cancelled = control.signal.aborted && !outcome.error;
    // Provider usage when reported; otherwise the gateway's count, marked estimated (never zero).
    const usage = result && outcome.servedModel ? (result.promptTokens !== undefined ? makeUsage(result.promptTokens, 0) : makeUsage(countEmbeddingTokens(job.request), 0, true)) : undefined;
    const status = cancelled ? 499 : outcome.error ? outcome.error.status : 200;
    // The ledger is written before the answer so that spend is visible once the client has it.
    await settle(job, outcome, usage, status);

    if (outcome.error) {
      control.publish({ type: 'failed', error: describeError(outcome.error), started: false });
    } else if (result && usage && outcome.servedModel) {
      const embeddings = result.embeddings.map(toTransportForm);
      control.publish({ type: 'completed', model: outcome.servedModel.id, choices: [], usage, embeddings });
    }
    await control.flush();
    logger.info(
      { jobId: job.id, keyId: job.keyId, kind: 'embeddings', model: job.targets[0], served: outcome.servedModel?.id, inputs: job.request.inputs.length, attempts: outcome.attempts.map((attempt) => `${attempt.model}${attempt.deployment ? `@${attempt.deployment}` : ''}:${attempt.outcome}`), cancelled },
      'embeddings finished',
    );
  };
}
