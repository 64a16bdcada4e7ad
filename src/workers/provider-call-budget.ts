import { maxProviderCallsPerRequest } from '../shared/providers/provider-call-limit.js';

// Counts the upstream calls one job makes, so that no mix of n, fallbacks, deployments and filled-in
// choices can turn one request into more than maxProviderCallsPerRequest provider calls.
export class ProviderCallBudget {
  private used = 0;

  constructor(readonly limit = maxProviderCallsPerRequest) {}

  get spent(): number {
    return this.used;
  }

  get remaining(): number {
    return this.limit - this.used;
  }

  /** Takes `count` calls if all of them fit; a try that does not fit is not started at all. */
  take(count: number): boolean {
    if (this.used + count > this.limit) return false;
    this.used += count;
    return true;
  }
}
