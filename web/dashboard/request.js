// One request: what it asked for and what served it, every attempt of its fallback chain (model,
// deployment, outcome, latency, time to first token for streams), tokens and cost, and the request and response bodies when payload
// logging was on for its key. Reached from the Usage page's recent requests (#/request?id=...).
import { useEffect, useState } from '../vendor/hooks.js';
import { api, ApiError } from './api.js';
import { count, dateTime, usd } from './format.js';
import { html } from './html.js';
import { TableWrap } from './ui.js';

function requestId() {
  return new URLSearchParams(location.hash.split('?')[1] ?? '').get('id') ?? '';
}

const outcomeText = (outcome) => outcome.replace(/_/g, ' ');

function Body({ title, value }) {
  return html`
    <section class="card body-log" aria-label=${title}>
      <h3>${title}</h3>
      <pre tabindex="0">${JSON.stringify(value, null, 2)}</pre>
    </section>`;
}

export function RequestPage() {
  const [id] = useState(requestId);
  const [entry, setEntry] = useState(undefined);
  const [log, setLog] = useState(undefined);
  const [keyName, setKeyName] = useState('');
  const [error, setError] = useState('');

  useEffect(() => {
    if (!id) return setError('No request chosen: open one from the recent requests on the Usage page.');
    Promise.all([api('/requests?limit=1000'), api('/keys')]).then(([requests, keys]) => {
      const found = requests.data.find((candidate) => candidate.id === id);
      setEntry(found ?? null);
      if (found) setKeyName(keys.data.find((key) => key.id === found.key_id)?.name ?? found.key_id);
    }, (failure) => setError(failure.message));
    api(`/requests/${encodeURIComponent(id)}/payload`).then(setLog, (failure) => setLog(failure instanceof ApiError && failure.status === 404 ? null : undefined));
  }, [id]);

  if (error) return html`<p class="error" role="alert">${error}</p>`;
  if (entry === undefined) return html`<p class="muted" role="status">Loading the request…</p>`;
  if (entry === null) return html`<p class="error" role="alert">Request <code>${id}</code> is not among the 1,000 most recent requests.</p>`;
  const fallbacks = Math.max(0, entry.attempts.length - 1);
  return html`
    <p><a href="#/usage">← Usage</a> · <code>${entry.id}</code></p>
    <section class="totals" aria-label="Request summary">
      <div class="card stat"><span class="stat-label">Status</span><span class="stat-value"><span class=${`badge ${entry.status < 400 ? 'active' : 'revoked'}`}>${entry.status}</span></span>
        <span class="muted small">${dateTime(entry.created_at)} · ${entry.stream ? 'stream' : 'single answer'}</span></div>
      <div class="card stat"><span class="stat-label">Model</span><span class="stat-value small-value"><code>${entry.requested_model}</code></span>
        <span class="muted small">served by ${entry.served_model ? html`<code>${entry.served_model}</code>` : 'none'} · ${fallbacks === 0 ? 'no fallback' : `${fallbacks} fallback${fallbacks > 1 ? 's' : ''}`}</span></div>
      <div class="card stat"><span class="stat-label">Tokens</span><span class="stat-value">${entry.estimated ? '≈ ' : ''}${count(entry.prompt_tokens + entry.completion_tokens)}</span>
        <span class="muted small">${count(entry.prompt_tokens)} prompt · ${count(entry.completion_tokens)} completion</span></div>
      <div class="card stat"><span class="stat-label">Cost</span><span class="stat-value">${usd(entry.cost_usd)}</span>
        <span class="muted small">key ${keyName} · ${count(Math.round(entry.latency_ms))} ms in all</span></div>
    </section>
    <h2>Attempts</h2>
    <${TableWrap} label="Attempts">
      <table class="attempts">
        <caption class="visually-hidden">Each provider attempt of this request, in order</caption>
        <thead><tr><th scope="col" class="num">#</th><th scope="col">Model</th><th scope="col">Deployment</th><th scope="col">Outcome</th><th scope="col" class="num">HTTP</th><th scope="col" class="num">Latency</th><th scope="col" class="num">First token</th><th scope="col">Detail</th></tr></thead>
        <tbody>
          ${entry.attempts.map((attempt, index) => html`
            <tr key=${index}>
              <td class="num">${index + 1}</td>
              <td><code>${attempt.model}</code></td>
              <td>${attempt.deployment ? html`<code>${attempt.deployment}</code>` : html`<span class="muted">none</span>`}</td>
              <td><span class=${`badge ${attempt.outcome === 'success' ? 'active' : 'revoked'}`}>${outcomeText(attempt.outcome)}</span></td>
              <td class="num">${attempt.status ?? html`<span class="muted">—</span>`}</td>
              <td class="num">${count(attempt.latency_ms)} ms</td>
              <td class="num">${attempt.first_token_ms === null || attempt.first_token_ms === undefined ? html`<span class="muted" title="Only streamed answers have a first token">—</span>` : `${count(attempt.first_token_ms)} ms`}</td>
              <td class="wrap">${attempt.message ?? ''}</td>
            </tr>`)}
        </tbody>
      </table>
    <//>
    <h2>Bodies</h2>
    ${log === undefined ? html`<p class="muted" role="status">Loading the request log…</p>`
      : log === null ? html`<p class="muted">Not logged. Request logging is off for this key (the default); turn it on with <code>PUT /admin/v1/keys/${entry.key_id}/payload_logging</code> and <code>{"enabled": true}</code>. Logs are kept ${'SWITCHBOARD_PAYLOAD_RETENTION_DAYS'} days (7 by default).</p>`
      : html`<div class="bodies"><${Body} title="Request body" value=${log.request} /><${Body} title="Response body" value=${log.response} /></div>`}`;
}
