// The dashboard's only way to the server: same-origin JSON calls under /dashboard/api. The session
// lives in an HttpOnly cookie the page cannot read; the CSRF token is kept in memory only and sent
// with every request that changes something.

let csrfToken = '';
let onSessionEnded = () => {};

export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

export function whenSessionEnds(callback) {
  onSessionEnded = callback;
}

export async function api(path, { method = 'GET', body } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  let response;
  try {
    response = await fetch(`api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network_error', 'The gateway did not answer. Check that it is running, then try again.');
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error ?? {};
    if (response.status === 401 && error.code === 'session_required') {
      csrfToken = '';
      onSessionEnded();
    }
    throw new ApiError(response.status, error.code ?? 'error', error.message ?? `The request failed with status ${response.status}.`, Number(response.headers.get('retry-after')) || undefined);
  }
  return data;
}

/** The current session, or null when signed out. */
export async function currentSession() {
  const session = await api('/session');
  if (!session.signed_in) return null;
  csrfToken = session.csrf_token;
  return session;
}

export async function signIn(token) {
  const session = await api('/session', { method: 'POST', body: { token } });
  csrfToken = session.csrf_token;
  return session;
}

export async function signOut() {
  try {
    await api('/session', { method: 'DELETE' });
  } finally {
    csrfToken = '';
  }
}

/** Ends every session of the signed-in user, on every ingress. */
export async function signOutEverywhere() {
  try {
    await api('/sessions', { method: 'DELETE' });
  } finally {
    csrfToken = '';
  }
}

/** The sign-ins this dashboard offers: { token: boolean, oidc: { label, start } | null }. */
export async function signInMethods() {
  return api('/sign-in-methods');
}
