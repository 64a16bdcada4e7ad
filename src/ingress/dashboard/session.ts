import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Store } from '../../shared/store/store.js';

// Dashboard sessions are signed cookies: `<session id>.<expiry>.<HMAC>`, keyed by a key derived
// from the admin token. Any ingress holding the same admin token accepts them, and changing the
// admin token ends every session at once. Only sign-outs are stored (in the gateway's store), so a
// signed-out cookie stays dead after a restart and on every ingress sharing the store.
// The CSRF token is an HMAC of the session id, so it is bound to one session and needs no storage.

export const sessionCookieName = 'sb_dashboard';
export const defaultSessionTtlMs = 8 * 60 * 60 * 1000;

export interface Session {
  id: string;
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

  issue(): IssuedSession {
    const id = randomBytes(18).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    const payload = `${id}.${Math.floor(expiresAt / 1000)}`;
    return { id, expiresAt: Math.floor(expiresAt / 1000) * 1000, cookieValue: `${payload}.${mac(this.key, `session.${payload}`)}`, csrfToken: this.csrfToken(id) };
  }

  /** The session a cookie value stands for, when its signature holds and it has not expired (sign-outs are DashboardSessions' part). */
  verify(cookieValue: string | undefined): Session | undefined {
    if (!cookieValue) return undefined;
    const parts = cookieValue.split('.');
    if (parts.length !== 3) return undefined;
    const [id, expiry, signature] = parts as [string, string, string];
    if (!/^[A-Za-z0-9_-]{24}$/.test(id) || !/^\d{1,12}$/.test(expiry)) return undefined;
    if (!sameText(signature, mac(this.key, `session.${id}.${expiry}`))) return undefined;
    const expiresAt = Number(expiry) * 1000;
    if (expiresAt <= this.now()) return undefined;
    return { id, expiresAt };
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
