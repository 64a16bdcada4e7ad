import { rootPrincipal, type Principal } from '../../shared/access/principal.js';
import type { UserRecord } from '../../shared/store/access-records.js';
import type { Store } from '../../shared/store/store.js';
import type { Session } from './session.js';

// Who a dashboard session acts for, read from the store on every request: a removed user, or one
// whose sessions were ended after this cookie was issued, is refused at once on every ingress
// sharing the store. A root session (the admin-token sign-in) lives only while that sign-in is on.

export function userPrincipal(user: UserRecord): Principal {
  return { kind: 'user', id: user.id, label: user.email, role: user.role, projects: user.projects };
}

export async function sessionPrincipal(session: Session, store: Pick<Store, 'getUser'>, tokenSignIn: boolean): Promise<Principal | undefined> {
  if (session.principalId === 'root') return tokenSignIn ? rootPrincipal : undefined;
  const user = await store.getUser(session.principalId);
  if (!user || user.removedAt) return undefined;
  if (user.sessionsValidAfter && session.issuedAt <= Date.parse(user.sessionsValidAfter)) return undefined;
  return userPrincipal(user);
}

/** What the dashboard shows about the signed-in person. */
export function publicPrincipal(principal: Principal): Record<string, unknown> {
  return { kind: principal.kind, id: principal.id, label: principal.label, role: principal.role, projects: principal.projects };
}
