import type { Logger } from 'pino';
import { defaultCooldown, type CooldownPolicy } from '../shared/catalog/catalog-types.js';
import type { FailureKind, UpstreamFailure } from '../shared/providers/chat-adapter.js';

// What this worker process has learnt about each deployment: recent latency, and whether it is in a
// cool-down after failing. The state is per process on purpose: it needs no coordination, a fresh
// worker starts optimistic, and every worker still learns a bad deployment within a few requests.
//
// Rules:
//   - a 429, or any failure carrying retry-after, starts a cool-down at once;
//   - other failures that say something about the deployment (5xx, overload, time-outs, connection
//     errors, refused credentials, unknown model) start one after `failuresBeforeCooldown` in a row;
//   - a 400, a cancelled request or the gateway's own failure says nothing about the deployment;
//   - a cool-down lasts the provider's cooldownMs, or the provider's retry-after when that is longer;
//   - when it is over, exactly one request is let through (the probe): success restores the
//     deployment, failure starts a new cool-down. Other requests skip it while the probe runs.

export type DeploymentStatus =
  | { state: 'healthy' }
  | { state: 'cooling'; retryInMs: number; cause: FailureKind }
  | { state: 'probe_due' }
  | { state: 'probing' };

export type AttemptVerdict = { kind: 'success'; latencyMs: number } | { kind: 'failure'; failure: UpstreamFailure };

interface Entry {
  consecutiveFailures: number;
  /** 0 when not cooling down; otherwise the end of the cool-down, after which a probe is due. */
  coolingUntil: number;
  cause?: FailureKind;
  probing: boolean;
  /** Exponentially weighted moving average of successful attempts' latency. */
  latencyMs?: number;
}

/** A new latency sample counts for this share, so a few slow answers move the average but one does not. */
const latencySmoothing = 0.3;

// 'internal' is the gateway's own failure (a request it could not build): the provider never saw it.
const neutralKinds: ReadonlySet<FailureKind> = new Set(['bad_request', 'cancelled', 'internal']);

export class DeploymentHealth {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(private readonly options: { logger?: Logger; now?: () => number } = {}) {
    this.now = options.now ?? Date.now;
  }

  status(deploymentId: string): DeploymentStatus {
    const entry = this.entries.get(deploymentId);
    if (!entry) return { state: 'healthy' };
    if (entry.probing) return { state: 'probing' };
    if (entry.coolingUntil === 0) return { state: 'healthy' };
    const retryInMs = entry.coolingUntil - this.now();
    if (retryInMs > 0) return { state: 'cooling', retryInMs, cause: entry.cause ?? 'server_error' };
    return { state: 'probe_due' };
  }

  /** Every deployment this process has tried, and whether it is cooling down now (metrics, dashboard). */
  *cooling(): Iterable<[string, boolean]> {
    for (const id of this.entries.keys()) yield [id, this.status(id).state === 'cooling'];
  }

  latencyMs(deploymentId: string): number | undefined {
    return this.entries.get(deploymentId)?.latencyMs;
  }

  /** Called when a request is sent to the deployment; a due probe is now in flight. */
  begin(deploymentId: string): { probe: boolean } {
    if (this.status(deploymentId).state !== 'probe_due') return { probe: false };
    this.entry(deploymentId).probing = true;
    this.options.logger?.info({ deployment: deploymentId }, 'deployment cool-down over; probing it with one request');
    return { probe: true };
  }

  /**
   * Records how a request sent after begin() ended; must be called once per begin(), with the
   * `probe` flag begin() returned. No verdict (a crash) only releases the probe.
   */
  report(deploymentId: string, policy: CooldownPolicy | undefined, verdict: AttemptVerdict | undefined, probe = false): void {
    const entry = this.entry(deploymentId);
    // Only the probe itself may end the probe: a last-resort request can overlap with it.
    if (probe) entry.probing = false;
    if (!verdict) return;
    if (verdict.kind === 'success') {
      if (entry.coolingUntil !== 0) this.options.logger?.info({ deployment: deploymentId, probe }, 'deployment answered again; back in rotation');
      entry.consecutiveFailures = 0;
      entry.coolingUntil = 0;
      entry.cause = undefined;
      const sample = verdict.latencyMs;
      entry.latencyMs = entry.latencyMs === undefined ? sample : entry.latencyMs + latencySmoothing * (sample - entry.latencyMs);
      return;
    }
    const { failure } = verdict;
    if (neutralKinds.has(failure.kind)) return;
    entry.consecutiveFailures += 1;
    const { cooldownMs, failuresBeforeCooldown } = policy ?? defaultCooldown;
    if (cooldownMs === 0) return;
    // A failed probe, or a failure while already cooling (a last-resort request), restarts the clock.
    const immediate = failure.kind === 'rate_limit' || failure.retryAfterSeconds !== undefined || probe || entry.coolingUntil !== 0;
    if (!immediate && entry.consecutiveFailures < failuresBeforeCooldown) return;
    const durationMs = Math.max(cooldownMs, Math.ceil((failure.retryAfterSeconds ?? 0) * 1000));
    entry.coolingUntil = this.now() + durationMs;
    entry.cause = failure.kind;
    this.options.logger?.warn(
      { deployment: deploymentId, cause: failure.kind, status: failure.status, consecutiveFailures: entry.consecutiveFailures, cooldownMs: durationMs, probe },
      'deployment cooling down',
    );
  }

  private entry(deploymentId: string): Entry {
    let entry = this.entries.get(deploymentId);
    if (!entry) {
      entry = { consecutiveFailures: 0, coolingUntil: 0, probing: false };
      this.entries.set(deploymentId, entry);
    }
    return entry;
  }
}
