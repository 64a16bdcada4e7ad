import type { HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../shared/errors.js';
import { tokensEqual } from '../shared/keys/api-key.js';
import { SignInThrottle } from './dashboard/sign-in-throttle.js';

// Every place that accepts the admin token (the bearer admin API and the dashboard's sign-in)
// goes through one guard per process, so guesses against either share one backoff per client
// address. While a client waits, even the right token is refused: answering it would tell a
// guesser which guess was right at full speed. Other addresses are never slowed.
// Scaled out, each ingress process keeps its own backoff (a guesser gains a factor of the
// number of ingress processes against a wait that doubles with every failure).

export class AdminTokenGuard {
  constructor(
    private readonly adminToken: string,
    private readonly throttle = new SignInThrottle(),
  ) {}

  /** Whole seconds the client must still wait before presenting a token, 0 when it may now. */
  waitSeconds(client: string): number {
    return Math.ceil(this.throttle.waitMs(client) / 1000);
  }

  /** Compares in constant time and counts the outcome against the client. */
  verify(client: string, presented: string): boolean {
    if (presented !== '' && tokensEqual(presented, this.adminToken)) {
      this.throttle.succeeded(client);
      return true;
    }
    this.throttle.failed(client);
    return false;
  }

  /** The bearer admin API's check: 429 while the client waits, 401 for a wrong or missing token. */
  checkBearer(client: string, authorization: string): void {
    const wait = this.waitSeconds(client);
    if (wait > 0) throw new GatewayError('too_many_attempts', `Too many wrong admin tokens from this address; try again in ${wait} s.`, { retryAfterSeconds: wait });
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!this.verify(client, match?.[1] ?? '')) throw new GatewayError('invalid_admin_token', 'Incorrect admin token.');
  }
}

/** The peer address of a request, as text; read it before the first await. */
export function clientAddress(res: HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}
