import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { CellCounter, CellHistogram } from './metric-cells.js';
import type { AttemptRecord } from '../job.js';
import type { Usage } from '../usage.js';

// The process's Prometheus registry: one per process, so the embedded default (ingress and workers
// in one process) serves one /metrics with both sides' series, and each scaled-out process serves
// its own. Label values are bounded on purpose: surfaces, catalog model and deployment ids, attempt
// outcomes, HTTP statuses and error codes; never key ids, secrets or a client's own strings (an
// unknown model name is `none`). Per-key figures belong to the usage API.

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

/** Model label of a request the gateway could not resolve to a catalog model. */
export const unresolvedModel = 'none';

const requests = new CellCounter({
  name: 'switchboard_requests_total',
  help: 'Client requests answered, by surface, requested catalog model, model that served them and HTTP status (499: the client left).',
  labelNames: ['surface', 'model', 'served_model', 'status'] as const,
  registers: [metricsRegistry],
});

const requestDuration = new CellHistogram({
  name: 'switchboard_request_duration_seconds',
  help: 'Time from the request reaching the ingress to its last byte, by surface and requested model.',
  labelNames: ['surface', 'model'] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  registers: [metricsRegistry],
});

const timeToFirstToken = new CellHistogram({
  name: 'switchboard_time_to_first_token_seconds',
  help: 'Streams: time from the request reaching the ingress to its first content, by surface and requested model.',
  labelNames: ['surface', 'model'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [metricsRegistry],
});

const tokens = new CellCounter({
  name: 'switchboard_tokens_total',
  help: 'Tokens billed, by the catalog model that served them and type (prompt, completion, cached, reasoning).',
  labelNames: ['model', 'type'] as const,
  registers: [metricsRegistry],
});

const cost = new CellCounter({
  name: 'switchboard_cost_usd_total',
  help: 'Cost billed in USD, by the catalog model that served the request.',
  labelNames: ['model'] as const,
  registers: [metricsRegistry],
});

const attempts = new CellCounter({
  name: 'switchboard_attempts_total',
  help: 'Provider attempts of the fallback chain, by catalog model, deployment and outcome.',
  labelNames: ['model', 'deployment', 'outcome'] as const,
  registers: [metricsRegistry],
});

const refusals = new CellCounter({
  name: 'switchboard_refusals_total',
  help: 'Requests refused before reaching a worker (authentication, validation, limits, budget, overload), by error code.',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

// Gauges of plain numbers, read when scraped: cheaper on the request path than Gauge.inc().
let openStreamCount = 0;
new Gauge({
  name: 'switchboard_open_streams',
  help: 'SSE streams this ingress process holds open now.',
  registers: [metricsRegistry],
  collect() {
    this.set(openStreamCount);
  },
});

const queueWait = new CellHistogram({
  name: 'switchboard_queue_wait_seconds',
  labelNames: [] as const,
  help: 'Time a job waited between enqueue at the ingress and a worker taking it.',
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

let activeJobCount = 0;
new Gauge({
  name: 'switchboard_jobs_active',
  help: 'Jobs this worker process is running now.',
  registers: [metricsRegistry],
  collect() {
    this.set(activeJobCount);
  },
});

/** A deployment's state as the cooling gauge reads it at scrape time. */
export interface CoolingSource {
  cooling(): Iterable<[deployment: string, cooling: boolean]>;
}
const coolingSources = new Set<CoolingSource>();
new Gauge({
  name: 'switchboard_deployment_cooling',
  help: '1 while a deployment is in a cool-down after failures (as this worker process sees it), else 0.',
  labelNames: ['deployment'] as const,
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const [deployment, cooling] of deploymentStates()) this.set({ deployment }, cooling ? 1 : 0);
  },
});

let queueDepth: (() => Promise<number>) | undefined;
new Gauge({
  name: 'switchboard_queue_waiting',
  help: 'Jobs waiting in the queue for a worker (read from the queue at scrape time).',
  registers: [metricsRegistry],
  async collect() {
    if (queueDepth) this.set(await queueDepth().catch(() => Number.NaN));
  },
});

/**
 * Deployments this process's workers have tried, and whether each is cooling down now (several
 * handlers of one process may know the same deployment: cooling in any of them counts). Empty in a
 * scaled-out ingress, whose workers are other processes.
 */
export function deploymentStates(): Map<string, boolean> {
  const states = new Map<string, boolean>();
  for (const source of coolingSources) for (const [deployment, cooling] of source.cooling()) states.set(deployment, (states.get(deployment) ?? false) || cooling);
  return states;
}

/** True when workers run in this process (the embedded default), so deploymentStates() is the whole picture. */
export function hasInProcessWorkers(): boolean {
  return coolingSources.size > 0;
}

export function watchDeploymentHealth(source: CoolingSource): void {
  coolingSources.add(source);
}

export function watchQueueDepth(depth: () => Promise<number>): void {
  queueDepth = depth;
}

const noLabels: readonly string[] = [];
const statusTexts = new Map<number, string>();

/** Ingress: one answered request. `startedAt` is performance.now() at its arrival. */
export function recordRequest(surface: string, model: string, servedModel: string, status: number, startedAt: number): void {
  let statusText = statusTexts.get(status);
  if (statusText === undefined) statusTexts.set(status, (statusText = String(status)));
  requests.add([surface, model, servedModel, statusText]);
  requestDuration.record([surface, model], (performance.now() - startedAt) / 1000);
}

export function recordFirstToken(surface: string, model: string, startedAt: number): void {
  timeToFirstToken.record([surface, model], (performance.now() - startedAt) / 1000);
}

export function recordRefusal(reason: string): void {
  refusals.add([reason]);
}

export function streamOpened(): void {
  openStreamCount++;
}

export function streamClosed(): void {
  openStreamCount--;
}

/** Worker: a job taken from the queue (and, with jobFinished, how many run now). */
export function jobTaken(enqueuedAt: number): void {
  queueWait.record(noLabels, Math.max(0, Date.now() - enqueuedAt) / 1000);
  activeJobCount++;
}

export function jobFinished(): void {
  activeJobCount--;
}

export function recordAttempts(records: readonly AttemptRecord[]): void {
  for (const record of records) attempts.add([record.model, record.deployment ?? 'none', record.outcome]);
}

/** Worker: what a job was billed, by the catalog model that served it. */
export function recordUsage(model: string, usage: Usage, costNanos: number): void {
  tokens.add([model, 'prompt'], usage.prompt_tokens);
  tokens.add([model, 'completion'], usage.completion_tokens);
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (typeof cached === 'number' && cached > 0) tokens.add([model, 'cached'], cached);
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === 'number' && reasoning > 0) tokens.add([model, 'reasoning'], reasoning);
  if (costNanos > 0) cost.add([model], costNanos / 1e9);
}
