// Bytes of request bodies this process holds while they are still arriving (and not yet handed to a
// handler). Without a bound, many slow or large uploads grow memory until the process is killed; with
// it, the upload that would cross the bound is refused (503 overloaded) and the rest keep working.

export class InflightBodyBudget {
  private held = 0;

  constructor(readonly limit: number) {}

  /** Takes `bytes` from the budget; false (and nothing taken) when that would cross the limit. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.held -= bytes;
  }

  get inUse(): number {
    return this.held;
  }
}
