import type { HttpResponse } from 'uWebSockets.js';
import { statusLine, type ReplyState } from '../http-reply.js';
import { securityHeaders } from './dashboard-http.js';

// Replies of the single sign-on routes, which browsers reach by navigation rather than fetch: a
// redirect that sets cookies, and a small page (no script, the dashboard's style sheet) that tells
// the person why a sign-in did not complete.

export function replyRedirectWithCookies(res: HttpResponse, state: ReplyState, location: string, cookies: string[]): void {
  if (state.aborted || state.done) return;
  state.done = true;
  res.cork(() => {
    res.writeStatus('302 Found');
    for (const [name, value] of securityHeaders('no-store')) res.writeHeader(name, value);
    for (const cookie of cookies) res.writeHeader('set-cookie', cookie);
    res.writeHeader('location', location);
    res.end();
  });
}

const escape = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

export function signInPage(title: string, message: string, hint?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="referrer" content="no-referrer">
  <title>${escape(title)} · Switchboard</title>
  <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/dashboard/assets/style.css">
</head>
<body>
  <main class="sign-in" id="main">
    <div class="card sign-in-card">
      <div class="brand brand-large"><img src="/dashboard/assets/favicon.svg" alt="" width="32" height="32"> Switchboard</div>
      <h1>${escape(title)}</h1>
      <p class="error" role="alert">${escape(message)}</p>
${hint ? `      <p class="hint">${escape(hint)}</p>\n` : ''}      <p><a href="/dashboard/">Back to the sign-in page</a></p>
    </div>
  </main>
</body>
</html>
`;
}

export function replySignInPage(res: HttpResponse, state: ReplyState, status: number, title: string, message: string, cookies: string[] = [], hint?: string): void {
  if (state.aborted || state.done) return;
  state.done = true;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    for (const [name, value] of securityHeaders('no-store')) res.writeHeader(name, value);
    for (const cookie of cookies) res.writeHeader('set-cookie', cookie);
    res.writeHeader('content-type', 'text/html; charset=utf-8');
    res.end(signInPage(title, message, hint));
  });
}
