import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

// Dashboard sessions are stateless signed cookies: `<session id>.<expiry>.<HMAC>`, keyed by a key
// derived from the admin token. Any ingress holding the same admin token accepts them (scaled out
// needs no shared session store), and changing the admin token ends every session at once.
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
  /** Sessions signed out before their expiry (this process only; they expire on their own elsewhere). */
  private readonly ended = new Map<string, number>();

  constructor(adminToken: string, readonly ttlMs = defaultSessionTtlMs, private readonly now: () => number = Date.now) {
    this.key = createHmac('sha256', adminToken).update('switchboard dashboard session v1').digest();
  }

  issue(): IssuedSession {
    const id = randomBytes(18).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    const payload = `${id}.${Math.floor(expiresAt / 1000)}`;
    return { id, expiresAt: Math.floor(expiresAt / 1000) * 1000, cookieValue: `${payload}.${mac(this.key, `session.${payload}`)}`, csrfToken: this.csrfToken(id) };
  }

  /** The session a cookie value stands for, when its signature holds and it has not expired or been ended. */
  verify(cookieValue: string | undefined): Session | undefined {
    if (!cookieValue) return undefined;
    const parts = cookieValue.split('.');
    if (parts.length !== 3) return undefined;
    const [id, expiry, signature] = parts as [string, string, string];
    if (!/^[A-Za-z0-9_-]{24}$/.test(id) || !/^\d{1,12}$/.test(expiry)) return undefined;
    if (!sameText(signature, mac(this.key, `session.${id}.${expiry}`))) return undefined;
    const expiresAt = Number(expiry) * 1000;
    if (expiresAt <= this.now() || this.ended.has(id)) return undefined;
    return { id, expiresAt };
  }

  csrfToken(sessionId: string): string {
    return mac(this.key, `csrf.${sessionId}`);
  }

  csrfMatches(session: Session, given: string): boolean {
    return given.length > 0 && sameText(given, this.csrfToken(session.id));
  }

  end(session: Session): void {
    const now = this.now();
    for (const [id, expiresAt] of this.ended) if (expiresAt <= now) this.ended.delete(id);
    this.ended.set(session.id, session.expiresAt);
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
