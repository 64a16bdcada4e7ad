import type { ModelDeployment } from '../shared/catalog/catalog-types.js';
import type { FailureKind } from '../shared/providers/chat-adapter.js';
import type { DeploymentHealth } from './deployment-health.js';

// Chooses which of a model's deployments serves the next try of a request.
//
//   1. A deployment whose cool-down is over is probed first, so it returns to rotation promptly.
//   2. Otherwise a healthy deployment is drawn at random, each with the share
//      weight / recent latency: the catalog's weights set the split, and faster deployments get more.
//   3. When every remaining deployment is cooling down, none is picked unless the caller allows it
//      (the last target of a request, where refusing would turn a possible answer into an error);
//      then the one closest to recovering is tried.

/** Latencies below this count as equal: on that scale differences are jitter, not a reason to shift traffic. */
export const latencyFloorMs = 50;

export interface DeploymentPick {
  deployment: ModelDeployment;
  /** This request is the one let through after a cool-down. */
  probe: boolean;
  /** Every deployment was cooling down; this one is tried as a last resort. */
  lastResort: boolean;
}

export interface PickOptions {
  allowCooling: boolean;
  random?: () => number;
}

export function pickDeployment(candidates: ModelDeployment[], health: DeploymentHealth, options: PickOptions): DeploymentPick | undefined {
  const due = candidates.find((deployment) => health.status(deployment.id).state === 'probe_due');
  if (due) return { deployment: due, probe: health.begin(due.id).probe, lastResort: false };
  const healthy = candidates.filter((deployment) => health.status(deployment.id).state === 'healthy');
  if (healthy.length > 0) {
    const deployment = weightedChoice(healthy, health, options.random ?? Math.random);
    health.begin(deployment.id);
    return { deployment, probe: false, lastResort: false };
  }
  if (!options.allowCooling || candidates.length === 0) return undefined;
  const deployment = [...candidates].sort((a, b) => retryInMs(health, a) - retryInMs(health, b))[0]!;
  health.begin(deployment.id);
  return { deployment, probe: false, lastResort: true };
}

/** How long until the soonest of these deployments may be tried again, and why it is out. */
export function soonestRecovery(candidates: ModelDeployment[], health: DeploymentHealth): { retryInMs: number; cause: FailureKind } | undefined {
  let soonest: { retryInMs: number; cause: FailureKind } | undefined;
  for (const deployment of candidates) {
    const status = health.status(deployment.id);
    if (status.state === 'cooling' && (!soonest || status.retryInMs < soonest.retryInMs)) soonest = { retryInMs: status.retryInMs, cause: status.cause };
  }
  return soonest;
}

function retryInMs(health: DeploymentHealth, deployment: ModelDeployment): number {
  const status = health.status(deployment.id);
  return status.state === 'cooling' ? status.retryInMs : 0;
}

function weightedChoice(deployments: ModelDeployment[], health: DeploymentHealth, random: () => number): ModelDeployment {
  if (deployments.length === 1) return deployments[0]!;
  const known = deployments.map((deployment) => health.latencyMs(deployment.id)).filter((latency): latency is number => latency !== undefined);
  // A deployment without samples yet is assumed typical, so it gets a fair share and is measured.
  const typical = known.length > 0 ? known.reduce((sum, latency) => sum + latency, 0) / known.length : latencyFloorMs;
  const shares = deployments.map((deployment) => deployment.weight / Math.max(health.latencyMs(deployment.id) ?? typical, latencyFloorMs));
  const total = shares.reduce((sum, share) => sum + share, 0);
  let draw = random() * total;
  for (let index = 0; index < deployments.length; index += 1) {
    draw -= shares[index]!;
    if (draw < 0) return deployments[index]!;
  }
  return deployments[deployments.length - 1]!;
}
