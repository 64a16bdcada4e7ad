import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Store } from '../../shared/store/store.js';

// Dashboard sessions are signed cookies: `<session id>.<who>.<issued>.<expiry>.<HMAC>`, keyed by a
// key derived from the admin token. <who> names the signed-in user ('root' for the admin-token
// sign-in), base64url-encoded; <issued> lets a user's "end all sessions" (removal, an admin's
// action) refuse every cookie issued before it. Any ingress holding the same admin token accepts
// them, and changing the admin token ends every session at once. Only sign-outs are stored (in the
// gateway's store), so a signed-out cookie stays dead after a restart and on every ingress sharing
// the store. The CSRF token is an HMAC of the session id, so it is bound to one session and needs
// no storage.

export const sessionCookieName = 'sb_dashboard';
export const defaultSessionTtlMs = 8 * 60 * 60 * 1000;

export interface Session {
  id: string;
  /** 'root' (the admin-token sign-in) or a user id. */
  principalId: string;
  /** Issue time, milliseconds since the epoch. */
  issuedAt: number;
  /** Expiry, milliseconds since the epoch. */
  expiresAt: number;
}

export interface IssuedSession extends Session {
  cookieValue: string;
  csrfToken: string;
}

function mac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url');
}

function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class SessionSigner {
  private readonly key: Buffer;

  constructor(adminToken: string, readonly ttlMs = defaultSessionTtlMs, private readonly now: () => number = Date.now) {
    this.key = createHmac('sha256', adminToken).update('switchboard dashboard session v1').digest();
  }

  issue(principalId = 'root'): IssuedSession {
    const id = randomBytes(18).toString('base64url');
    const issuedAt = this.now();
    const expiry = Math.floor((issuedAt + this.ttlMs) / 1000);
    const payload = `${id}.${Buffer.from(principalId).toString('base64url')}.${issuedAt}.${expiry}`;
    return { id, principalId, issuedAt, expiresAt: expiry * 1000, cookieValue: `${payload}.${mac(this.key, `session.${payload}`)}`, csrfToken: this.csrfToken(id) };
  }

  /** The session a cookie value stands for, when its signature holds and it has not expired (sign-outs are DashboardSessions' part). */
  verify(cookieValue: string | undefined): Session | undefined {
    if (!cookieValue) return undefined;
    const parts = cookieValue.split('.');
    if (parts.length !== 5) return undefined;
    const [id, who, issued, expiry, signature] = parts as [string, string, string, string, string];
    if (!/^[A-Za-z0-9_-]{24}$/.test(id) || !/^[A-Za-z0-9_-]{1,200}$/.test(who) || !/^\d{1,15}$/.test(issued) || !/^\d{1,12}$/.test(expiry)) return undefined;
    if (!sameText(signature, mac(this.key, `session.${id}.${who}.${issued}.${expiry}`))) return undefined;
    const expiresAt = Number(expiry) * 1000;
    if (expiresAt <= this.now()) return undefined;
    return { id, principalId: Buffer.from(who, 'base64url').toString(), issuedAt: Number(issued), expiresAt };
  }

  csrfToken(sessionId: string): string {
    return mac(this.key, `csrf.${sessionId}`);
  }

  csrfMatches(session: Session, given: string): boolean {
    return given.length > 0 && sameText(given, this.csrfToken(session.id));
  }
}

/** Signed cookies plus the store's record of sign-outs. */
export class DashboardSessions {
  constructor(
    readonly signer: SessionSigner,
    private readonly store: Pick<Store, 'endDashboardSession' | 'isDashboardSessionEnded'>,
  ) {}

  /** The session of a cookie value: signed, unexpired and not signed out. */
  async verify(cookieValue: string | undefined): Promise<Session | undefined> {
    const session = this.signer.verify(cookieValue);
    if (!session) return undefined;
    return (await this.store.isDashboardSessionEnded(session.id)) ? undefined : session;
  }

  async end(session: Session): Promise<void> {
    await this.store.endDashboardSession(session.id, new Date(session.expiresAt).toISOString());
  }
}

/** The value of one cookie from a Cookie header. */
export function readCookie(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator > 0 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/** Set-Cookie for a session (or, with an empty value and no lifetime, for removing it). */
export function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${sessionCookieName}=${value}; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}${secure ? '; Secure' : ''}`;
}
