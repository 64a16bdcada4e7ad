import type { Role } from '../../shared/access/principal.js';
import type { OidcSettings } from '../../shared/config.js';

// Who may sign in, and with which role, from the claims the identity provider vouched for:
// a verified email in an allowed domain, membership of an allowed group when groups are required,
// and the role of the strongest mapped group (none mapped: the role stored for the user applies).

/** A sign-in the gateway will not complete; `code` goes into the audit log, `message` to the person. */
export class SignInRefused extends Error {
  constructor(readonly code: string, message: string, readonly email?: string) {
    super(message);
  }
}

export interface AdmittedIdentity {
  email: string;
  name: string;
  /** From the groups claim mapping; undefined when no mapped group matched. */
  role?: Role;
  groups: string[];
}

const strength: Record<Role, number> = { admin: 3, member: 2, viewer: 1 };

function groupsOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  // Some providers send one group as a string, or a space- or comma-separated list.
  if (typeof value === 'string') return value.split(/[\s,]+/).filter((item) => item !== '');
  return [];
}

export function admitClaims(settings: OidcSettings, claims: Record<string, unknown>): AdmittedIdentity {
  const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
  if (!email.includes('@')) throw new SignInRefused('email_missing', 'The identity provider did not share an email address; ask for the "email" scope to be allowed for Switchboard.');
  if (claims.email_verified === false) throw new SignInRefused('email_unverified', `The email address ${email} is not verified at the identity provider.`, email);
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (settings.allowedDomains.length > 0 && !settings.allowedDomains.includes(domain)) {
    const allowed = settings.allowedDomains.map((item) => `@${item}`).join(', ');
    throw new SignInRefused('domain_not_allowed', `${email} may not sign in to this dashboard: only addresses ending in ${allowed} are allowed.`, email);
  }
  const groups = groupsOf(claims[settings.groupsClaim]);
  if (settings.allowedGroups.length > 0 && !groups.some((group) => settings.allowedGroups.includes(group))) {
    throw new SignInRefused('group_not_allowed', `${email} may not sign in to this dashboard: membership of one of these groups is required: ${settings.allowedGroups.join(', ')}.`, email);
  }
  let role: Role | undefined;
  for (const { group, role: mapped } of settings.roleMap) {
    if (groups.includes(group) && (!role || strength[mapped] > strength[role])) role = mapped;
  }
  const name = typeof claims.name === 'string' && claims.name.trim() !== '' ? claims.name.trim() : email;
  return { email, name, role, groups };
}
