import type { Role } from '../access/principal.js';

// Users, their per-user admin tokens and the audit log (migration 8, access-schema.ts), as both
// stores keep them. Implemented once for both in access-tables.ts.

export interface UserRecord {
  /** usr_... */
  id: string;
  /** Lower case; unique among users that are not removed. */
  email: string;
  name: string | null;
  role: Role;
  /** Project ids a member belongs to. */
  projects: string[];
  /** The OpenID Connect "iss|sub" once the user has signed in that way, else null. */
  subject: string | null;
  createdAt: string;
  removedAt: string | null;
  /** Dashboard sessions issued before this time are dead (null: none ended yet). */
  sessionsValidAfter: string | null;
}

export interface NewUser {
  email: string;
  name?: string | null;
  role: Role;
  projects?: string[];
}

export type UserPatch = Partial<Pick<UserRecord, 'email' | 'name' | 'role' | 'projects'>>;

export interface SignInIdentity {
  /** "iss|sub" */
  subject: string;
  email: string;
  name?: string | null;
  /** From a claim mapping: overwrites the stored role when given. */
  role?: Role;
}

export interface AdminTokenRecord {
  /** atk_... */
  id: string;
  userId: string;
  name: string;
  /** `sbat_...` and the last four characters: safe to show. */
  hint: string;
  createdAt: string;
  revokedAt: string | null;
}

export type StoredAdminToken = AdminTokenRecord & { secretHash: string };

export type AuditOutcome = 'success' | 'failure';

/** What changed, field by field; never a secret (key secrets, token secrets, hashes). */
export type AuditChanges = Record<string, { from?: unknown; to?: unknown }>;

export interface AuditEntry {
  /** aud_... */
  id: string;
  at: string;
  actorKind: 'root' | 'user' | 'token' | 'anonymous';
  actorId: string;
  actorLabel: string;
  /** key.created, key.updated, key.rotated, key.revoked, project.*, alert.*, user.*, admin_token.*, session.* */
  action: string;
  targetType: string | null;
  targetId: string | null;
  /** The client's address. */
  client: string;
  changes: AuditChanges | null;
  outcome: AuditOutcome;
}

export type NewAuditEntry = Omit<AuditEntry, 'id' | 'at' | 'outcome' | 'changes' | 'targetType' | 'targetId'> & {
  at?: string;
  outcome?: AuditOutcome;
  changes?: AuditChanges | null;
  targetType?: string | null;
  targetId?: string | null;
};

export interface AuditFilter {
  /** An actor id (usr_, atk_, root) or label (an email). */
  actor?: string;
  /** An action (key.created), or a family of them (key.* or key). */
  action?: string;
  targetId?: string;
  /** Inclusive. */
  since?: string;
  /** Exclusive. */
  until?: string;
  /** Entries older than this entry (its id): the next page. */
  before?: string;
  /** 1-1000, 100 when absent. */
  limit?: number;
}

export interface AccessStore {
  /**
   * The user of a dashboard sign-in: found by subject, else by email (linking the subject), else
   * created (role from the identity, else viewer). A role in the identity overwrites the stored
   * one. A removed user is not revived: it comes back with removedAt set. Throws
   * SubjectConflictError when the email's user is linked to another subject.
   */
  upsertUserFromSignIn(identity: SignInIdentity): Promise<UserRecord>;
  getUser(id: string): Promise<UserRecord | null>;
  /** Every user, removed ones included, oldest first. */
  listUsers(): Promise<UserRecord[]>;
  /** Throws UserExistsError when a user that is not removed has this email. */
  createUser(user: NewUser): Promise<UserRecord>;
  /** Null when there is no such user (or it is removed). */
  updateUser(id: string, patch: UserPatch): Promise<UserRecord | null>;
  /** Marks the user removed, ends their sessions and revokes their admin tokens; null when none. */
  removeUser(id: string): Promise<UserRecord | null>;
  /** Ends every dashboard session of the user issued until now. */
  endUserSessions(id: string): Promise<UserRecord | null>;
  /** A new token for a user; `secret` exists only in this answer. */
  createAdminToken(input: { userId: string; name: string }): Promise<{ record: AdminTokenRecord; secret: string }>;
  /** Tokens (revoked ones included), oldest first; of one user when given. */
  listAdminTokens(userId?: string): Promise<AdminTokenRecord[]>;
  getAdminToken(id: string): Promise<AdminTokenRecord | null>;
  /** Keeps the first revocation time; null when there is no such token. */
  revokeAdminToken(id: string): Promise<AdminTokenRecord | null>;
  /** The token with this SHA-256 that is not revoked, or null. */
  findAdminTokenBySecretHash(hash: string): Promise<AdminTokenRecord | null>;
  /** For `switchboard migrate`: every token with its hash (the hash never leaves the store otherwise). */
  exportAdminTokens(): Promise<StoredAdminToken[]>;
  /** For `switchboard migrate`: writes a user or token exactly as given, replacing one with the same id. */
  importUser(user: UserRecord): Promise<void>;
  importAdminToken(token: StoredAdminToken): Promise<void>;
  /** For `switchboard migrate`: writes the entries not there yet (by id), never changing one; how many were new. */
  importAudit(entries: AuditEntry[]): Promise<number>;
  /** Appends an entry; the log has no way to change or delete one. */
  appendAudit(entry: NewAuditEntry): Promise<AuditEntry>;
  /** Newest first. */
  queryAudit(filter: AuditFilter): Promise<AuditEntry[]>;
}

export class UserExistsError extends Error {
  constructor(email: string) {
    super(`A user with email ${email} already exists.`);
  }
}

export class SubjectConflictError extends Error {
  constructor() {
    super('The user with this email is linked to another sign-in subject.');
  }
}
