import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

// A real OpenID Connect provider (the `oidc-provider` package) on a free local port, for the
// dashboard's single sign-on tests. Its users sign in on plain HTML forms served here through the
// provider's interaction API (email and password, then an "Allow" consent form), which Chromium
// fills in like a person would. Email and groups reach the gateway through the UserInfo endpoint,
// as they do with many real providers (the ID token carries only the subject).

export interface TestUser {
  email: string;
  password: string;
  name: string;
  groups: string[];
  /** The provider's email_verified claim (default true). */
  emailVerified?: boolean;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  users: Record<string, TestUser>;
  /** The SWITCHBOARD_OIDC_* settings that point a gateway at this provider. */
  environment(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

export const defaultTestUsers: Record<string, TestUser> = {
  admin: { email: 'ada@acme.test', password: 'ada-password', name: 'Ada Admin', groups: ['sb-admins', 'staff'] },
  member: { email: 'max@acme.test', password: 'max-password', name: 'Max Member', groups: ['sb-team'] },
  viewer: { email: 'vera@acme.test', password: 'vera-password', name: 'Vera Viewer', groups: ['staff'] },
  outsider: { email: 'olga@other.test', password: 'olga-password', name: 'Olga Outsider', groups: ['sb-admins'] },
  unverified: { email: 'uma@acme.test', password: 'uma-password', name: 'Uma Unverified', groups: ['sb-admins', 'staff'], emailVerified: false },
};

const escape = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head><body><main><h1>${escape(title)}</h1>${body}</main></body></html>`;
}

async function formBody(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString());
}

function reply(response: ServerResponse, status: number, html: string): void {
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  response.end(html);
}

/**
 * `localhost` as the issuer's host (the default) puts the provider on another site than the
 * gateway at 127.0.0.1, so the browser treats the redirects between them as cross-site, as it
 * would with a real provider; the SameSite rules of the gateway's cookies are tested that way.
 */
export async function startOidcProvider(options: { users?: Record<string, TestUser>; host?: 'localhost' | '127.0.0.1' } = {}): Promise<TestOidcProvider> {
  const users = options.users ?? defaultTestUsers;
  const byId = new Map(Object.values(users).map((user) => [`id-${user.email}`, user]));
  const clientId = 'switchboard-dashboard';
  const clientSecret = randomBytes(24).toString('base64url');
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://${options.host ?? 'localhost'}:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

  const provider = new Provider(issuer, {
    clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: ['http://127.0.0.1/dashboard/auth/oidc/callback'], grant_types: ['authorization_code'], response_types: ['code'] }],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test-signing-key', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    pkce: { required: () => true },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_context: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: (_context: unknown, id: string) => {
      const user = byId.get(id);
      if (!user) return undefined;
      return { accountId: id, claims: () => ({ sub: id, email: user.email, email_verified: user.emailVerified ?? true, name: user.name, groups: user.groups }) };
    },
  });
  // Every gateway under test listens on its own free port: allow the callback path on any loopback port.
  provider.Client.prototype.redirectUriAllowed = (value: string) => {
    const url = new URL(value);
    return url.protocol === 'http:' && url.hostname === '127.0.0.1' && url.pathname === '/dashboard/auth/oidc/callback' && url.search === '';
  };
  const providerHandler = provider.callback();

  async function interaction(request: IncomingMessage, response: ServerResponse, uid: string, step: string | undefined): Promise<void> {
    const details = await provider.interactionDetails(request, response);
    if (details.uid !== uid) return reply(response, 400, page('Wrong interaction', '<p>Start again.</p>'));
    if (request.method === 'GET' && details.prompt.name === 'login') {
      return reply(response, 200, page('Sign in to the test identity provider', `
        <form method="post" action="/interaction/${uid}/login">
          <label>Email <input name="email" type="email" autocomplete="username" required></label>
          <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
          <button type="submit">Sign in</button>
        </form>`));
    }
    if (request.method === 'GET' && details.prompt.name === 'consent') {
      return reply(response, 200, page('Allow Switchboard to see your profile', `
        <p>Switchboard asks for: ${escape(details.params.scope ?? '')}</p>
        <form method="post" action="/interaction/${uid}/consent"><button type="submit">Allow</button></form>`));
    }
    if (request.method === 'POST' && step === 'login') {
      const form = await formBody(request);
      const user = Object.values(users).find((candidate) => candidate.email === form.get('email') && candidate.password === form.get('password'));
      if (!user) return reply(response, 401, page('Sign-in failed', `<p>Wrong email or password.</p><p><a href="/interaction/${uid}">Try again</a></p>`));
      return provider.interactionFinished(request, response, { login: { accountId: `id-${user.email}` } }, { mergeWithLastSubmission: false });
    }
    if (request.method === 'POST' && step === 'consent') {
      const accountId = details.session!.accountId;
      const grant = (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ?? new provider.Grant({ accountId, clientId: details.params.client_id! });
      if (details.prompt.details.missingOIDCScope) grant.addOIDCScope(details.prompt.details.missingOIDCScope.join(' '));
      if (details.prompt.details.missingOIDCClaims) grant.addOIDCClaims(details.prompt.details.missingOIDCClaims);
      return provider.interactionFinished(request, response, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    }
    reply(response, 400, page('Unexpected step', `<p>${escape(details.prompt.name)}</p>`));
  }

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    // Browsers ask every site for one; an empty answer keeps their consoles free of 404s.
    if (request.url === '/favicon.ico') return void response.writeHead(204).end();
    const match = /^\/interaction\/([A-Za-z0-9_-]+)(?:\/(login|consent))?$/.exec((request.url ?? '').split('?')[0]!);
    if (!match) return providerHandler(request, response);
    interaction(request, response, match[1]!, match[2]).catch((error: Error) => {
      if (!response.headersSent) reply(response, 500, page('Interaction failed', `<p>${escape(error.message)}</p>`));
    });
  });

  return {
    issuer,
    clientId,
    clientSecret,
    users,
    environment: (extra = {}) => ({
      SWITCHBOARD_OIDC_ISSUER: issuer,
      SWITCHBOARD_OIDC_CLIENT_ID: clientId,
      SWITCHBOARD_OIDC_CLIENT_SECRET: clientSecret,
      SWITCHBOARD_OIDC_SCOPES: 'openid email profile groups',
      ...extra,
    }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
