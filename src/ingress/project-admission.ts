import type { Admission, AdmissionInput, ProjectCharge } from '../shared/counters/counters.js';
import { GatewayError } from '../shared/errors.js';
import { usdToNanos } from '../shared/pricing.js';
import type { ProjectRecord } from '../shared/store/store.js';

// The project level of admission: a key's project adds its budget, period and rate limits to the
// key's, checked and reserved by the counters in the same atomic call (AdmissionInput.project).
// Shared by the chat pipeline's and the embeddings admission.

/** What the counters need of the key's project, or nothing when it has none. */
export function projectAdmission(project: ProjectRecord | null): Pick<AdmissionInput, 'project'> {
  if (!project) return {};
  return {
    project: {
      id: project.id,
      limits: { rpm: project.rpm, tpm: project.tpm, maxConcurrent: null, budgetNanos: project.budgetUsd === null ? null : usdToNanos(project.budgetUsd), budgetPeriod: project.budgetPeriod },
    },
  };
}

/** Whether the project needs the request's tokens counted (it has a tpm limit or a budget). */
export function projectNeedsTokens(project: ProjectRecord | null): boolean {
  return project !== null && (project.tpm !== null || project.budgetUsd !== null);
}

export function projectCharge(project: ProjectRecord | null): ProjectCharge | undefined {
  return project ? { id: project.id, budgetPeriod: project.budgetPeriod } : undefined;
}

/** The 402 or 429 of a request its project's limits refused. */
export function projectRefusal(project: ProjectRecord, admission: Extract<Admission, { ok: false }>, need: { reserveNanos: number; tokens: number }, headers: Array<[string, string]>, usd: (nanos: number) => string): GatewayError {
  const { retryAfterSeconds } = admission;
  const name = `project '${project.name}'`;
  if (admission.reason === 'budget_exceeded') {
    const period = project.budgetPeriod === 'none' ? 'total' : project.budgetPeriod;
    return new GatewayError(
      'budget_exceeded',
      `This request could cost up to ${usd(need.reserveNanos)}, more than is left of the ${period} budget of ${usd(usdToNanos(project.budgetUsd ?? 0))} of this key's ${name} once spent and in-flight requests of all its keys are counted.`,
      { headers, retryAfterSeconds },
    );
  }
  const message = project.rpm !== null && admission.rateLimit.remainingRequests === 0
    ? `This key's ${name} has reached its limit of ${project.rpm} requests per minute.`
    : `This request needs up to ${need.tokens} tokens; this key's ${name} has ${admission.rateLimit.remainingTokens ?? 0} of its ${project.tpm} tokens per minute left.`;
  return new GatewayError('rate_limit_exceeded', retryAfterSeconds === undefined ? message : `${message} Try again in ${retryAfterSeconds} s.`, { retryAfterSeconds, headers });
}
