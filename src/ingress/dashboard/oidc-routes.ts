import type { TemplatedApp } from 'uWebSockets.js';
import type { Logger } from 'pino';
import { SubjectConflictError } from '../../shared/store/access-records.js';
import type { Store } from '../../shared/store/store.js';
import type { IngressContext } from '../server.js';
import { dashboardRouteOptions, snapshot } from './dashboard-http.js';
import { callbackPath, flowCookieName, OidcSignIn, SignInRefused } from './oidc-sign-in.js';
import { readCookie, sessionCookie, type SessionSigner } from './session.js';
import { replyRedirectWithCookies, replySignInPage } from './sign-in-replies.js';
import { SignInThrottle } from './sign-in-throttle.js';

// The browser's way through single sign-on: /dashboard/auth/oidc/start sends it to the identity
// provider, the provider sends it back to /dashboard/auth/oidc/callback, which signs the user in
// (creating or linking the user in the store) and returns to the dashboard with a session cookie.
// Every outcome is in the audit log: session.signed_in, or session.sign_in_failed with the reason.
// Failures back off per client address like wrong admin tokens do (two free, then 1 s, 2 s, ...),
// so nobody can fill the audit log by replaying made-up codes.

export interface OidcRouteServices {
  context: IngressContext;
  oidc: OidcSignIn;
  signer: SessionSigner;
  store: Store;
  logger: Logger;
}

export function registerOidcRoutes(app: TemplatedApp, services: OidcRouteServices): void {
  const { context, oidc, signer, store, logger } = services;
  const options = dashboardRouteOptions(0, false);
  const throttle = new SignInThrottle();

  app.get('/dashboard/auth/oidc/start', context.route('dashboard oidc start', options, async (call) => {
    const { res, state } = call;
    const request = snapshot(call);
    try {
      const { location, setCookie } = await oidc.start(request.ownOrigin, request.secure);
      replyRedirectWithCookies(res, state, location, [setCookie]);
    } catch (error) {
      logger.warn({ err: (error as Error).message, issuer: oidc.settings.issuer.href }, 'OpenID Connect discovery failed');
      replySignInPage(res, state, 502, 'Single sign-on is unavailable', 'The identity provider did not answer. Try again in a moment, or ask the operator to check SWITCHBOARD_OIDC_ISSUER.');
    }
  }));

  app.get(callbackPath, context.route('dashboard oidc callback', options, async (call) => {
    const { res, state } = call;
    const request = snapshot(call);
    const clearFlow = oidc.clearCookie(request.secure);
    const wait = Math.ceil(throttle.waitMs(request.client) / 1000);
    if (wait > 0) return replySignInPage(res, state, 429, 'Too many failed sign-ins', `Too many failed sign-ins from this address; try again in ${wait} s.`, [clearFlow]);
    let email: string | undefined;
    try {
      const identity = await oidc.finish(request.query, readCookie(request.cookie, flowCookieName));
      email = identity.email;
      let user;
      try {
        user = await store.upsertUserFromSignIn({ subject: identity.subject, email: identity.email, name: identity.name, role: identity.role });
      } catch (error) {
        if (error instanceof SubjectConflictError) {
          throw new SignInRefused('subject_conflict', `The dashboard user ${identity.email} is linked to another account at the identity provider; an administrator must remove that user first.`, identity.email);
        }
        throw error;
      }
      if (user.removedAt) throw new SignInRefused('user_removed', `${user.email} was removed from this dashboard by an administrator.`, user.email);
      const issued = signer.issue(user.id);
      await store.appendAudit({
        actorKind: 'user', actorId: user.id, actorLabel: user.email, action: 'session.signed_in', targetType: 'user', targetId: user.id,
        client: request.client, changes: { method: { to: 'oidc' }, role: { to: user.role } },
      });
      throttle.succeeded(request.client);
      logger.info({ client: request.client, userId: user.id }, 'dashboard sign-in (single sign-on)');
      replyRedirectWithCookies(res, state, '/dashboard/', [sessionCookie(issued.cookieValue, signer.ttlMs / 1000, request.secure), clearFlow]);
    } catch (error) {
      if (!(error instanceof SignInRefused)) {
        logger.warn({ err: (error as Error).message }, 'single sign-on failed');
        return replySignInPage(res, state, 502, 'Single sign-on failed', 'The sign-in could not be finished: the identity provider or the gateway\'s database did not answer. Try again in a moment.', [clearFlow]);
      }
      // A callback without a flow of ours is no attempt by anyone we could name (a stale tab, a
      // forged link): it is logged, not written to the audit log, which strangers cannot fill.
      if (error.code !== 'sign_in_expired') throttle.failed(request.client);
      if (error.code !== 'sign_in_expired') await store.appendAudit({
        actorKind: 'anonymous', actorId: '', actorLabel: error.email ?? email ?? '', action: 'session.sign_in_failed', targetType: null, targetId: null,
        client: request.client, changes: { method: { to: 'oidc' }, reason: { to: error.code } }, outcome: 'failure',
      });
      logger.warn({ client: request.client, reason: error.code }, 'dashboard sign-in refused (single sign-on)');
      replySignInPage(res, state, 403, 'Sign-in refused', error.message, [clearFlow], 'To sign in with another account, sign out of this one at your identity provider first.');
    }
  }));
}
