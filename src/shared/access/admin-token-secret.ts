import { createHash, randomBytes } from 'node:crypto';

// Per-user admin tokens: `sbat_` and 43 base64url characters (256 random bits). Only a SHA-256 of
// the whole token is stored (with that much entropy a slow hash adds nothing), and the token is
// shown once, when it is created. The prefix tells the bearer guard which kind of token it holds.

export const adminTokenPrefix = 'sbat_';
const tokenPattern = /^sbat_[A-Za-z0-9_-]{43}$/;

export interface GeneratedAdminToken {
  secret: string;
  secretHash: string;
  /** Safe to show and store: the prefix and the last four characters. */
  hint: string;
}

export function hashAdminToken(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function generateAdminToken(): GeneratedAdminToken {
  const secret = `${adminTokenPrefix}${randomBytes(32).toString('base64url')}`;
  return { secret, secretHash: hashAdminToken(secret), hint: `${adminTokenPrefix}...${secret.slice(-4)}` };
}

/** Whether the text has the shape of a per-user admin token (not whether it is valid). */
export function looksLikeAdminToken(text: string): boolean {
  return tokenPattern.test(text);
}
