import { principalOfUser } from '../../shared/access/principal-lookup.js';
import { rootPrincipal, type Principal } from '../../shared/access/principal.js';
import type { Store } from '../../shared/store/store.js';
import type { Session } from './session.js';

// Who a dashboard session acts for, read from the store on every request: a removed user, or one
// whose sessions were ended after this cookie was issued, is refused at once on every ingress
// sharing the store. A root session (the admin-token sign-in) lives only while that sign-in is on.

export async function sessionPrincipal(session: Session, store: Pick<Store, 'getUser'>, tokenSignIn: boolean): Promise<Principal | undefined> {
  if (session.principalId === 'root') return tokenSignIn ? rootPrincipal : undefined;
  const user = await store.getUser(session.principalId);
  if (!user) return undefined;
  if (user.sessionsValidAfter && session.issuedAt <= Date.parse(user.sessionsValidAfter)) return undefined;
  return principalOfUser(user) ?? undefined;
}
