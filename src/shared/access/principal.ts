// Who is acting on the admin API or the dashboard. Every admin action receives one: the bearer
// guard makes it from the root token or a per-user admin token, the dashboard from its session.
// A member's projects and every role are read from the store on each request, so a role change
// or a removal takes effect at once.

export type Role = 'admin' | 'member' | 'viewer';

export const roles: readonly Role[] = ['admin', 'member', 'viewer'];

export interface Principal {
  /** root: SWITCHBOARD_ADMIN_TOKEN (bearer or the dashboard's token sign-in). */
  kind: 'root' | 'user' | 'token';
  /** 'root', a user id (usr_...), or an admin token id (atk_...). */
  id: string;
  /** A user's email, a token's name, or 'admin token'. */
  label: string;
  role: Role;
  /** Project ids a member belongs to ([] for admin and viewer: not consulted). */
  projects: string[];
  /** For a token: the user it acts for, so the audit log can name the person. */
  userId?: string;
  userEmail?: string;
}

export const rootPrincipal: Principal = Object.freeze({ kind: 'root', id: 'root', label: 'admin token', role: 'admin', projects: [] });

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (roles as readonly string[]).includes(value);
}
