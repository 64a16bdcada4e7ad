// Usage: cost, requests and tokens by day, model and key over a date range, and recent requests.
import { useCallback, useEffect, useMemo, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { BarChart } from './charts.js';
import { count, dateTime, isoDay, shortCount, usd } from './format.js';
import { html } from './html.js';
import { EmptyState, TableWrap } from './ui.js';

const DAY = 86400000;
const metrics = {
  cost: { label: 'Cost', value: (row) => row.cost_usd, format: usd, colour: '#1d4ed8' },
  requests: { label: 'Requests', value: (row) => row.requests, format: count, axis: shortCount, colour: '#047857' },
  tokens: { label: 'Tokens', value: (row) => row.prompt_tokens + row.completion_tokens, format: count, axis: shortCount, colour: '#7c3aed' },
};
const dayLabel = new Intl.DateTimeFormat('en-GB', { month: 'short', day: 'numeric', timeZone: 'UTC' });

function defaultRange() {
  const today = new Date();
  return { from: isoDay(new Date(today.getTime() - 13 * DAY)), to: isoDay(today) };
}

function days(from, to) {
  const list = [];
  for (let time = Date.parse(`${from}T00:00:00Z`); time <= Date.parse(`${to}T00:00:00Z`) && list.length < 400; time += DAY) list.push(isoDay(new Date(time)));
  return list;
}

/**
 * The billed split of a usage row or a request: cache reads and writes (subsets of the prompt
 * tokens, each at its own price) and reasoning (part of the completion); '' when there is none.
 */
function splitText(row) {
  const parts = [];
  if (row.cache_read_tokens) parts.push(`${count(row.cache_read_tokens)} cache read`);
  if (row.cache_write_tokens) parts.push(`${count(row.cache_write_tokens)} cache write${row.cache_write_1h_tokens ? ` (${count(row.cache_write_1h_tokens)} 1 h)` : ''}`);
  if (row.reasoning_tokens) parts.push(`${count(row.reasoning_tokens)} reasoning`);
  return parts.join(' · ');
}

// Attempts, not "fallback attempts": a request whose primary failed and whose fallback answered
// made 2 attempts and used 1 fallback (the old column counted the failed primary as a fallback).
function Attempts({ attempts }) {
  const list = attempts ?? [];
  if (list.length <= 1 && list.every((attempt) => attempt.outcome === 'success')) return html`<span class="muted">${list.length}</span>`;
  const text = list.map((attempt) => `${attempt.model}: ${attempt.outcome.replace(/_/g, ' ')}`).join(' → ');
  return html`<span title=${text}>${list.length} <span class="muted small">(${text})</span></span>`;
}

const refusalReasons = { 401: 'invalid or revoked key', 402: 'over budget', 403: 'model not allowed', 429: 'rate limited' };

/** Refused requests (counted, not in the ledger) per key, model and status. */
function RefusedTable({ rows, keyNames }) {
  if (!rows || rows.length === 0) return null;
  return html`
    <h2>Refused requests</h2>
    <${TableWrap} label="Refused requests">
      <table class="refused cards">
        <caption class="visually-hidden">Requests the gateway refused in the range, per key, model and status</caption>
        <thead><tr><th scope="col">Key</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col" class="num">Refused</th></tr></thead>
        <tbody>
          ${rows.map((row) => html`
            <tr key=${`${row.key_id} ${row.model} ${row.status}`}>
              <td data-label="Key">${keyNames.get(row.key_id) ?? row.key_id}</td>
              <td data-label="Model">${row.model ? html`<code>${row.model}</code>` : html`<span class="muted">none</span>`}</td>
              <td data-label="Status"><span class="badge revoked">${row.status}</span> <span class="muted small">${refusalReasons[row.status] ?? ''}</span></td>
              <td class="num" data-label="Refused">${count(row.count)}</td>
            </tr>`)}
        </tbody>
      </table>
    <//>`;
}

export function UsagePage() {
  const [range, setRange] = useState(defaultRange);
  const [keyId, setKeyId] = useState('');
  const [model, setModel] = useState('');
  const [metric, setMetric] = useState('cost');
  const [data, setData] = useState(null);
  const [options, setOptions] = useState({ keys: [], models: [] });
  const [error, setError] = useState('');

  useEffect(() => {
    Promise.all([api('/keys'), api('/models')]).then(
      ([keys, models]) => setOptions({ keys: keys.data, models: models.data.map((entry) => entry.id) }),
      (failure) => setError(failure.message),
    );
  }, []);

  const load = useCallback(async () => {
    if (range.from > range.to) return setError('The start date is after the end date.');
    const query = new URLSearchParams({ since: `${range.from}T00:00:00Z`, until: new Date(Date.parse(`${range.to}T00:00:00Z`) + DAY).toISOString() });
    if (keyId) query.set('key_id', keyId);
    if (model) query.set('model', model);
    const get = (path, extra = {}) => api(`${path}?${new URLSearchParams({ ...Object.fromEntries(query), ...extra })}`).then((body) => body.data);
    try {
      const [totals, byDay, byModel, byKey, requests, refused] = await Promise.all([
        get('/usage'), get('/usage', { group_by: 'day' }), get('/usage', { group_by: 'model' }), get('/usage', { group_by: 'key' }), get('/requests', { limit: '50' }),
        get('/usage/refused'),
      ]);
      setData({ totals: totals[0] ?? { requests: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0 }, byDay, byModel, byKey, requests, refused });
      setError('');
    } catch (failure) {
      setError(failure.message);
    }
  }, [range, keyId, model]);
  useEffect(() => {
    load();
  }, [load]);

  const keyNames = useMemo(() => new Map(options.keys.map((key) => [key.id, key.name])), [options.keys]);
  const chosen = metrics[metric];
  const charts = useMemo(() => {
    if (!data) return null;
    const dayList = days(range.from, range.to);
    const perDay = new Map(data.byDay.map((row) => [String(row.day).slice(0, 10), row]));
    const sorted = (rows) => [...rows].sort((a, b) => chosen.value(b) - chosen.value(a)).slice(0, 12);
    const models = sorted(data.byModel);
    const keys = sorted(data.byKey);
    return {
      day: { labels: dayList.map((day) => dayLabel.format(new Date(`${day}T00:00:00Z`))), values: dayList.map((day) => (perDay.has(day) ? chosen.value(perDay.get(day)) : 0)) },
      model: { labels: models.map((row) => row.model ?? '(none served)'), values: models.map(chosen.value) },
      key: { labels: keys.map((row) => keyNames.get(row.key_id) ?? row.key_id), values: keys.map(chosen.value) },
    };
  }, [data, metric, keyNames, range]);

  const setDate = (field) => (event) => event.currentTarget.value && setRange({ ...range, [field]: event.currentTarget.value });
  const chart = (name, caption, categoryName) => html`
    <${BarChart} caption=${caption} title=${chosen.label} categoryName=${categoryName} labels=${charts[name].labels} values=${charts[name].values}
      format=${chosen.format} axisFormat=${chosen.axis ?? chosen.format} colour=${chosen.colour} />`;

  return html`
    <form class="toolbar filters" onSubmit=${(event) => { event.preventDefault(); load(); }} aria-label="Usage filters">
      <div class="field inline"><label for="usage-from">From</label><input id="usage-from" type="date" value=${range.from} max=${range.to} onChange=${setDate('from')} /></div>
      <div class="field inline"><label for="usage-to">To</label><input id="usage-to" type="date" value=${range.to} min=${range.from} onChange=${setDate('to')} /></div>
      <div class="field inline">
        <label for="usage-key">Key</label>
        <select id="usage-key" value=${keyId} onChange=${(event) => setKeyId(event.currentTarget.value)}>
          <option value="">All keys</option>
          ${options.keys.map((key) => html`<option value=${key.id}>${key.name} (${key.key_hint.slice(-7)})</option>`)}
        </select>
      </div>
      <div class="field inline">
        <label for="usage-model">Served model</label>
        <select id="usage-model" value=${model} onChange=${(event) => setModel(event.currentTarget.value)}>
          <option value="">All models</option>
          ${options.models.map((id) => html`<option value=${id}>${id}</option>`)}
        </select>
      </div>
      <button type="submit" class="push">Refresh</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${!data ? html`<p class="muted" role="status">Loading usage…</p>` : html`
      <${RefusedTable} rows=${data.refused} keyNames=${keyNames} />
      <section class="totals" aria-label="Totals for the range">
        <div class="card stat"><span class="stat-label">Cost</span><span class="stat-value">${usd(data.totals.cost_usd)}</span></div>
        <div class="card stat"><span class="stat-label">Requests</span><span class="stat-value">${count(data.totals.requests)}</span></div>
        <div class="card stat"><span class="stat-label">Tokens</span><span class="stat-value">${count(data.totals.prompt_tokens + data.totals.completion_tokens)}</span>
          <span class="muted small">${count(data.totals.prompt_tokens)} prompt · ${count(data.totals.completion_tokens)} completion</span>
          ${splitText(data.totals) && html`<span class="muted small">${splitText(data.totals)}</span>`}</div>
      </section>
      ${data.totals.requests === 0 && data.requests.length === 0
        ? html`<${EmptyState} title="No requests in this range">
            <p>Nothing was recorded between ${range.from} and ${range.to}${keyId || model ? ' with these filters' : ''}. Widen the dates${keyId || model ? ' or clear the filters' : ''}, or send a request with one of your keys (see <a href="#/keys">API keys</a>) to <code>POST /v1/chat/completions</code>.</p>
          <//>`
        : html`
          <fieldset class="metric">
            <legend>Chart</legend>
            ${Object.entries(metrics).map(([name, entry]) => html`
              <label class=${metric === name ? 'chosen' : ''}><input type="radio" name="metric" value=${name} checked=${metric === name} onChange=${() => setMetric(name)} /> ${entry.label}</label>`)}
          </fieldset>
          <div class="charts">
            ${chart('day', `${chosen.label} by day (UTC)`, 'Day')}
            ${chart('model', `${chosen.label} by served model`, 'Model')}
            ${chart('key', `${chosen.label} by key`, 'Key')}
          </div>`}
      <h2>Recent requests</h2>
      ${data.requests.length === 0
        ? html`<p class="muted">No requests recorded in this range yet.</p>`
        : html`
          <${TableWrap} label="Recent requests">
            <table class="requests cards">
              <caption class="visually-hidden">The ${data.requests.length} most recent requests in the range, newest first</caption>
              <thead><tr>
                <th scope="col">Time</th><th scope="col">Key</th><th scope="col">Requested</th><th scope="col">Served</th><th scope="col">Attempts</th>
                <th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th><th scope="col" class="num">Latency</th><th scope="col">Status</th>
              </tr></thead>
              <tbody>
                ${data.requests.map((entry) => html`
                  <tr key=${entry.id}>
                    <td data-label="Time"><a href=${`#/request?id=${encodeURIComponent(entry.id)}`} aria-label=${`Request of ${dateTime(entry.created_at)}`}>${dateTime(entry.created_at)}</a></td>
                    <td data-label="Key">${keyNames.get(entry.key_id) ?? entry.key_id}</td>
                    <td data-label="Requested"><code>${entry.requested_model}</code></td>
                    <td data-label="Served">${entry.served_model ? html`<code>${entry.served_model}</code>` : html`<span class="muted">none</span>`}</td>
                    <td data-label="Attempts"><${Attempts} attempts=${entry.attempts} /></td>
                    <td class="num" data-label="Tokens" title=${entry.estimated ? 'Counted with a tokenizer: the provider reported no usage' : ''}>
                      <span>${entry.estimated ? '≈ ' : ''}${count(entry.prompt_tokens)} + ${count(entry.completion_tokens)}</span>
                      ${splitText(entry) && html`<br /><span class="muted small">${splitText(entry)}</span>`}</td>
                    <td class="num" data-label="Cost">${usd(entry.cost_usd)}</td>
                    <td class="num" data-label="Latency">${count(Math.round(entry.latency_ms))} ms</td>
                    <td data-label="Status"><span class=${`badge ${entry.status < 400 ? 'active' : 'revoked'}`}>${entry.status}</span></td>
                  </tr>`)}
              </tbody>
            </table>
          <//>`}`}`;
}
