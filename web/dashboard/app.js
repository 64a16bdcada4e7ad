// The dashboard shell: session check, sign-in (admin token and/or single sign-on), navigation
// between the pages (hash routes; what a role cannot use is not shown), sign-out.
import { render } from '../vendor/preact.js';
import { useEffect, useRef, useState } from '../vendor/hooks.js';
import { ApiError, currentSession, signIn, signInMethods, signOut, signOutEverywhere, whenSessionEnds } from './api.js';
import { AuditPage } from './audit.js';
import { html } from './html.js';
import { KeysPage } from './keys.js';
import { HealthPage } from './health.js';
import { ModelsPage } from './models.js';
import { ProjectsPage } from './projects.js';
import { RequestPage } from './request.js';
import { UsagePage } from './usage.js';
import { roleNames, UsersPage } from './users.js';

const pages = {
  keys: { title: 'API keys', component: KeysPage },
  projects: { title: 'Projects', component: ProjectsPage },
  models: { title: 'Models', component: ModelsPage },
  usage: { title: 'Usage', component: UsagePage },
  health: { title: 'Health', component: HealthPage },
  users: { title: 'Users', component: UsersPage, roles: ['admin', 'viewer'] },
  audit: { title: 'Audit log', component: AuditPage, roles: ['admin', 'viewer'] },
  // Reached from a request in Usage; not in the navigation.
  request: { title: 'Request', component: RequestPage, hidden: true },
};

// The same 24-hour clock as every other time on the dashboard (format.js), whatever the browser's locale.
const sessionTime = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' });

const allowedFor = (page, me) => !page.roles || page.roles.includes(me.role);

function routeFromHash(me) {
  const name = location.hash.replace(/^#\/?/, '').split('?')[0];
  return pages[name] && allowedFor(pages[name], me) ? name : 'keys';
}

function SignIn({ onSignedIn, notice, methods }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const input = useRef(null);
  useEffect(() => input.current?.focus(), []);
  const sso = methods.oidc;

  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setError('');
    try {
      const session = await signIn(token);
      setToken('');
      onSignedIn(session);
    } catch (failure) {
      setToken('');
      if (failure instanceof ApiError && failure.status === 429) setError(`Too many failed attempts. Wait ${failure.retryAfter ?? 'a few'} seconds, then try again.`);
      else if (failure instanceof ApiError && failure.status === 401) setError('Sign-in failed. Check the admin token and try again.');
      else setError(failure.message);
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  }

  return html`
    <main class="sign-in" id="main">
      <form class="card sign-in-card" method="post" onSubmit=${submit} aria-describedby="sign-in-help">
        <div class="brand brand-large"><img src="assets/favicon.svg" alt="" width="32" height="32" /> Switchboard</div>
        <h1>Sign in to the dashboard</h1>
        ${notice && html`<p class="notice" role="status">${notice}</p>`}
        ${sso && html`<a class="button primary sso" href=${sso.start}>${sso.label}</a>`}
        ${sso && methods.token && html`<p class="divider"><span>or, for break-glass use</span></p>`}
        ${methods.token && html`
          <label for="admin-token">Admin token</label>
          <input id="admin-token" ref=${sso ? undefined : input} type="password" autocomplete="current-password" required value=${token}
            onInput=${(event) => setToken(event.currentTarget.value)} aria-invalid=${error ? 'true' : 'false'} aria-describedby=${error ? 'sign-in-error' : undefined} />
          <p id="sign-in-help" class="hint">The value of SWITCHBOARD_ADMIN_TOKEN, or the token printed when the gateway first started (kept in the data folder as admin-token).</p>
          ${error && html`<p id="sign-in-error" class="error" role="alert">${error}</p>`}
          <button class=${sso ? '' : 'primary'} type="submit" disabled=${busy}>${busy ? 'Signing in…' : sso ? 'Sign in with the admin token' : 'Sign in'}</button>`}
        ${!sso && !methods.token && html`<p class="error" role="alert">No sign-in is configured for this dashboard.</p>`}
      </form>
    </main>`;
}

function Shell({ session, onSignOut, onSignOutEverywhere }) {
  const me = session.principal;
  const [route, setRoute] = useState(routeFromHash(me));
  // The whole hash keys the page: #/request?id=a to #/request?id=b is another request.
  const [hash, setHash] = useState(location.hash);
  const [message, setMessage] = useState('');
  const heading = useRef(null);
  const first = useRef(true);
  useEffect(() => {
    const changed = () => {
      setRoute(routeFromHash(me));
      setHash(location.hash);
    };
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  useEffect(() => {
    document.title = `${pages[route].title} · Switchboard`;
    setMessage('');
    if (!first.current) heading.current?.focus();
    first.current = false;
  }, [route]);
  useEffect(() => {
    if (!message) return undefined;
    const timer = setTimeout(() => setMessage(''), 6000);
    return () => clearTimeout(timer);
  }, [message]);

  const Page = pages[route].component;
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <div class="brand"><img src="assets/favicon.svg" alt="" width="24" height="24" /> Switchboard</div>
      <nav aria-label="Dashboard">
        <ul>
          ${Object.entries(pages).filter(([, page]) => !page.hidden && allowedFor(page, me)).map(([name, page]) => html`
            <li><a href=${`#/${name}`} aria-current=${route === name ? 'page' : undefined}>${page.title}</a></li>`)}
        </ul>
      </nav>
      <div class=${me.kind === 'user' ? 'session with-everywhere' : 'session'}>
        <span class="who" title=${`${me.label}, session until ${sessionTime.format(new Date(session.expires_at))}`}><span class="who-label">${me.label}</span> <span class=${`badge role ${me.role}`}>${roleNames[me.role]}</span></span>
        <span class="muted session-expiry">Session until ${sessionTime.format(new Date(session.expires_at))}</span>
        ${me.kind === 'user' && html`<button type="button" class="quiet" onClick=${onSignOutEverywhere} title="End your sessions in every browser, on every gateway instance">Sign out everywhere</button>`}
        <button type="button" onClick=${onSignOut}>Sign out</button>
      </div>
    </header>
    <main id="main">
      <h1 ref=${heading} tabindex="-1">${pages[route].title}</h1>
      <div class="live" role="status" aria-live="polite">${message && html`<p class="toast">${message}</p>`}</div>
      <${Page} key=${hash} notify=${setMessage} me=${me} />
    </main>`;
}

function App() {
  const [session, setSession] = useState(undefined);
  const [notice, setNotice] = useState('');
  const [failure, setFailure] = useState('');
  const [methods, setMethods] = useState(null);

  useEffect(() => {
    whenSessionEnds(() => {
      setNotice('Your session has ended. Sign in again to continue.');
      setSession(null);
    });
    Promise.all([currentSession(), signInMethods()]).then(([current, offered]) => {
      setMethods(offered);
      setSession(current);
    }, (error) => setFailure(error.message));
  }, []);

  async function leave(everywhere) {
    try {
      await (everywhere ? signOutEverywhere() : signOut());
    } catch {
      // Signed out either way: the cookie is gone or the session had already ended.
    }
    setNotice(everywhere ? 'You are signed out everywhere.' : 'You are signed out.');
    setSession(null);
  }

  if (failure) return html`<main class="sign-in" id="main"><div class="card"><h1>Dashboard unavailable</h1><p role="alert">${failure}</p></div></main>`;
  if (session === undefined) return html`<p class="boot" role="status">Loading…</p>`;
  if (!session) return html`<${SignIn} notice=${notice} methods=${methods} onSignedIn=${(next) => { setNotice(''); setSession(next); }} />`;
  return html`<${Shell} session=${session} onSignOut=${() => leave(false)} onSignOutEverywhere=${() => leave(true)} />`;
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
