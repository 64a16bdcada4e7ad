import type { HttpResponse } from 'uWebSockets.js';
import { looksLikeAdminToken } from '../shared/access/admin-token-secret.js';
import { principalOfAdminToken } from '../shared/access/principal-lookup.js';
import { rootPrincipal, type Principal } from '../shared/access/principal.js';
import { GatewayError } from '../shared/errors.js';
import { tokensEqual } from '../shared/keys/api-key.js';
import type { AccessStore } from '../shared/store/access-records.js';
import { storeUnavailable } from '../shared/store/store-unavailable.js';
import { SignInThrottle } from './dashboard/sign-in-throttle.js';

// Every place that accepts the admin token or a per-user admin token (the bearer admin API and the
// dashboard's sign-in) goes through one guard per process, so guesses against either share one backoff per client
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

  /**
   * The bearer admin API's check: who is calling (the root token or a per-user `sbat_` token,
   * whose user's role is read from the store now); 429 while the client waits, 401 for a wrong,
   * revoked or removed user's token. A refusal is not written to the audit log: anyone can send
   * wrong tokens, and a write per guess would let them fill the store (a write amplification
   * attack); the per-address backoff is the defence. Dashboard sign-ins, failed ones included,
   * are audited by the dashboard.
   */
  async authenticate(client: string, authorization: string, store: AccessStore): Promise<Principal> {
    const wait = this.waitSeconds(client);
    if (wait > 0) throw new GatewayError('too_many_attempts', `Too many wrong admin tokens from this address; try again in ${wait} s.`, { retryAfterSeconds: wait });
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] ?? '';
    if (looksLikeAdminToken(presented)) {
      let principal: Principal | null;
      try {
        principal = await principalOfAdminToken(store, presented);
      } catch (error) {
        throw storeUnavailable(error, 'check the admin token');
      }
      if (principal) {
        this.throttle.succeeded(client);
        return principal;
      }
      this.throttle.failed(client);
    } else if (this.verify(client, presented)) {
      return rootPrincipal;
    }
    throw new GatewayError('invalid_admin_token', 'Incorrect admin token.');
  }
}

/** The peer address of a request, as text; read it before the first await. */
export function clientAddress(res: HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}
