// Per-client backoff for wrong admin tokens (bearer admin API and dashboard sign-in, through
// AdminTokenGuard). The first failures cost nothing; after that each
// failure doubles the wait before the client may try again (1 s, 2 s, 4 s ... up to 5 minutes).
// While a client waits, every attempt is refused, the right token included, so guessing stays slow.
// A success clears the client's record; records of clients quiet for 15 minutes are forgotten.

const freeFailures = 2;
const firstWaitMs = 1000;
const maxWaitMs = 5 * 60 * 1000;
const forgetAfterMs = 15 * 60 * 1000;
const maxClients = 10_000;

interface ClientRecord {
  failures: number;
  blockedUntil: number;
  lastFailure: number;
}

export class SignInThrottle {
  private readonly clients = new Map<string, ClientRecord>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Milliseconds the client must still wait, 0 when it may try now. */
  waitMs(client: string): number {
    const record = this.clients.get(client);
    if (!record) return 0;
    return Math.max(0, record.blockedUntil - this.now());
  }

  failed(client: string): void {
    const now = this.now();
    const record = this.clients.get(client);
    const failures = record && now - record.lastFailure < forgetAfterMs ? record.failures + 1 : 1;
    const wait = failures <= freeFailures ? 0 : Math.min(maxWaitMs, firstWaitMs * 2 ** (failures - freeFailures - 1));
    this.clients.delete(client);
    this.clients.set(client, { failures, blockedUntil: now + wait, lastFailure: now });
    this.prune(now);
  }

  succeeded(client: string): void {
    this.clients.delete(client);
  }

  private prune(now: number): void {
    // Insertion order is last-failure order, so stale records sit at the front.
    for (const [client, record] of this.clients) {
      if (this.clients.size <= maxClients && now - record.lastFailure < forgetAfterMs) break;
      this.clients.delete(client);
    }
  }
}
