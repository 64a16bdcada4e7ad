import { createHmac, timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import type { OidcSettings } from '../../shared/config.js';
import { admitClaims, type AdmittedIdentity, SignInRefused } from './oidc-claims.js';

// The OpenID Connect authorization code flow with PKCE (openid-client), for the dashboard.
// `start` sends the browser to the provider; what the callback must check (state, nonce, PKCE
// verifier, where to return) travels in a short-lived signed cookie, so any ingress sharing the
// admin token can finish a flow another one started. The provider's metadata comes from discovery
// on first use (and again after a failure), so the gateway starts while the provider is down.

export const flowCookieName = 'sb_oidc';
export const callbackPath = '/dashboard/auth/oidc/callback';
const flowCookiePath = '/dashboard/auth/oidc';
const flowLifetimeSeconds = 600;

interface Flow {
  /** PKCE code verifier. */
  v: string;
  state: string;
  nonce: string;
  /** The redirect URL used for this flow (derived from the browser's address unless configured). */
  redirect: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

export { SignInRefused, type AdmittedIdentity };

export interface SignInIdentity extends AdmittedIdentity {
  /** "issuer|sub": the user's stable identity at the provider. */
  subject: string;
}

function isLoopback(url: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

export class OidcSignIn {
  private configuration?: Promise<client.Configuration>;
  private readonly key: Buffer;

  constructor(readonly settings: OidcSettings, adminToken: string, private readonly now: () => number = Date.now) {
    this.key = createHmac('sha256', adminToken).update('switchboard dashboard oidc flow v1').digest();
  }

  private discover(): Promise<client.Configuration> {
    const { issuer, clientId, clientSecret } = this.settings;
    // Plain HTTP only for a provider on this machine (development, tests); anything else must be HTTPS.
    const insecure = issuer.protocol === 'http:' && isLoopback(issuer);
    this.configuration ??= client
      .discovery(issuer, clientId, undefined, clientSecret ? client.ClientSecretBasic(clientSecret) : client.None(), insecure ? { execute: [client.allowInsecureRequests] } : undefined)
      .catch((error: unknown) => {
        this.configuration = undefined;
        throw error;
      });
    return this.configuration;
  }

  /** The provider's authorization URL for a new flow, and the Set-Cookie that remembers the flow. */
  async start(ownOrigin: string, secure: boolean): Promise<{ location: string; setCookie: string }> {
    const configuration = await this.discover();
    const redirect = this.settings.redirectUrl?.href ?? `${ownOrigin}${callbackPath}`;
    const flow: Flow = { v: client.randomPKCECodeVerifier(), state: client.randomState(), nonce: client.randomNonce(), redirect, exp: Math.floor(this.now() / 1000) + flowLifetimeSeconds };
    const location = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirect,
      scope: this.settings.scopes,
      code_challenge: await client.calculatePKCECodeChallenge(flow.v),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    return { location: location.href, setCookie: this.flowCookie(this.seal(flow), flowLifetimeSeconds, secure) };
  }

  /** Finishes a flow at the callback: the user's identity, checked against the allowed domains and groups. */
  async finish(query: string, cookieValue: string | undefined): Promise<SignInIdentity> {
    const flow = this.open(cookieValue);
    if (!flow) throw new SignInRefused('sign_in_expired', 'The sign-in took too long or was started in another browser. Start it again.');
    const parameters = new URLSearchParams(query);
    const error = parameters.get('error');
    if (error) throw new SignInRefused('provider_refused', `The identity provider refused the sign-in (${error}${parameters.get('error_description') ? `: ${parameters.get('error_description')}` : ''}).`);
    const configuration = await this.discover();
    const current = new URL(flow.redirect);
    current.search = query;
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(configuration, current, { pkceCodeVerifier: flow.v, expectedState: flow.state, expectedNonce: flow.nonce, idTokenExpected: true });
    } catch (failure) {
      // The provider out of reach is not a refusal (the caller answers 502); a wrong answer is.
      if (failure instanceof TypeError && /fetch failed/i.test(failure.message)) throw failure;
      throw new SignInRefused('provider_response_invalid', `The identity provider's answer could not be verified (${(failure as Error).message}). Start the sign-in again.`);
    }
    const idClaims = tokens.claims();
    if (!idClaims) throw new SignInRefused('provider_response_invalid', 'The identity provider sent no ID token.');
    let claims: Record<string, unknown> = { ...idClaims };
    // Many providers put email and groups only in the UserInfo answer, not in the ID token.
    const wanted = ['email', ...(this.settings.roleMap.length > 0 || this.settings.allowedGroups.length > 0 ? [this.settings.groupsClaim] : [])];
    if (wanted.some((name) => claims[name] === undefined) && configuration.serverMetadata().userinfo_endpoint && tokens.access_token) {
      const info = await client.fetchUserInfo(configuration, tokens.access_token, idClaims.sub);
      // The ID token's claims win; UserInfo fills in what it left out (its subject is checked to match).
      claims = { ...info, ...claims };
    }
    return { ...admitClaims(this.settings, claims), subject: `${idClaims.iss}|${idClaims.sub}` };
  }

  /** Set-Cookie that removes the flow cookie once the callback has used it. */
  clearCookie(secure: boolean): string {
    return this.flowCookie('', 0, secure);
  }

  private flowCookie(value: string, maxAge: number, secure: boolean): string {
    // Lax, not Strict: the provider's redirect back is a cross-site navigation, and it must carry this cookie.
    return `${flowCookieName}=${value}; Path=${flowCookiePath}; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
  }

  private seal(flow: Flow): string {
    const payload = Buffer.from(JSON.stringify(flow)).toString('base64url');
    return `${payload}.${createHmac('sha256', this.key).update(payload).digest('base64url')}`;
  }

  private open(value: string | undefined): Flow | undefined {
    const [payload, signature, extra] = (value ?? '').split('.');
    if (!payload || !signature || extra !== undefined) return undefined;
    const expected = Buffer.from(createHmac('sha256', this.key).update(payload).digest('base64url'));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let flow: Flow;
    try {
      flow = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Flow;
    } catch {
      return undefined;
    }
    return typeof flow.exp === 'number' && flow.exp * 1000 > this.now() ? flow : undefined;
  }
}
