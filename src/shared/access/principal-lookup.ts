import type { AccessStore, UserRecord } from '../store/access-records.js';
import { hashAdminToken } from './admin-token-secret.js';
import type { Principal } from './principal.js';

// Principals are made from the store on every request, never cached: a role change, a removal or
// a revoked token takes effect on the next request, on every ingress sharing the store.

/** The principal of a signed-in user; null when the user is removed. */
export function principalOfUser(user: UserRecord): Principal | null {
  if (user.removedAt !== null) return null;
  return { kind: 'user', id: user.id, label: user.email, role: user.role, projects: user.role === 'member' ? [...user.projects] : [] };
}

/** The principal of a per-user admin token (its user's role and projects); null when unknown, revoked or its user removed. */
export async function principalOfAdminToken(store: AccessStore, secret: string): Promise<Principal | null> {
  const token = await store.findAdminTokenBySecretHash(hashAdminToken(secret));
  if (!token) return null;
  const user = await store.getUser(token.userId);
  if (!user || user.removedAt !== null) return null;
  return {
    kind: 'token', id: token.id, label: token.name, role: user.role, projects: user.role === 'member' ? [...user.projects] : [],
    userId: user.id, userEmail: user.email,
  };
}

/** The actor fields of an audit entry: a token's entries name its user's email, so one filter finds a person's actions. */
export function auditActor(principal: Principal): { actorKind: Principal['kind']; actorId: string; actorLabel: string } {
  return { actorKind: principal.kind, actorId: principal.id, actorLabel: principal.kind === 'token' ? principal.userEmail ?? principal.label : principal.label };
}
