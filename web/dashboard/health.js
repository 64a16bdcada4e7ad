// Health: latency and time-to-first-token percentiles by model, error rates by model and key,
// budget status per key, and deployment health (cool-downs, recent failures), over a recent window
// of the ledger (the newest 1,000 requests in it).
import { useEffect, useMemo, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { BarChart } from './charts.js';
import { count, dateTime, periodNames, periodStart, usd } from './format.js';
import { html } from './html.js';
import { EmptyState, TableWrap } from './ui.js';

const windows = { hour: { label: 'Last hour', ms: 3600000 }, day: { label: 'Last 24 hours', ms: 86400000 }, week: { label: 'Last 7 days', ms: 604800000 } };
const ms = (value) => (value === null ? '—' : `${count(Math.round(value))} ms`);
const percent = (part, whole) => (whole === 0 ? '—' : `${(Math.round((part / whole) * 1000) / 10).toFixed(1)} %`);

/** Nearest-rank percentile of a list of numbers; null when empty. */
function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** An error is the gateway's answer of 400 or more; 499 (the client left) is not counted as one. */
const isError = (entry) => entry.status >= 400 && entry.status !== 499;

function group(entries, keyOf) {
  const groups = new Map();
  for (const entry of entries) {
    const name = keyOf(entry);
    if (!groups.has(name)) groups.set(name, []);
    groups.get(name).push(entry);
  }
  return [...groups.entries()].sort((a, b) => b[1].length - a[1].length);
}

function budgetState(spent, budget) {
  if (spent >= budget) return { text: 'exhausted', tone: 'revoked' };
  if (spent >= budget * 0.8) return { text: 'near limit', tone: 'warn' };
  return { text: 'ok', tone: 'active' };
}

export function HealthPage() {
  const [windowName, setWindowName] = useState('day');
  const [data, setData] = useState(null);
  const [error, setError] = useState('');

  useEffect(() => {
    const since = new Date(Date.now() - windows[windowName].ms).toISOString();
    (async () => {
      const [requests, keys, deployments] = await Promise.all([api(`/requests?limit=1000&since=${encodeURIComponent(since)}`), api('/keys'), api('/deployments')]);
      const periods = [...new Set(keys.data.filter((key) => key.budget_usd !== null && key.budget_period !== 'none').map((key) => key.budget_period))];
      const spend = new Map();
      await Promise.all(periods.map(async (period) => {
        const usage = await api(`/usage?group_by=key&since=${encodeURIComponent(periodStart(period))}`);
        for (const row of usage.data) spend.set(`${period}:${row.key_id}`, row.cost_usd);
      }));
      const spentOf = (key) => (key.budget_period === 'none' ? key.spent_usd : spend.get(`${key.budget_period}:${key.id}`) ?? 0);
      setData({ requests: requests.data, keys: keys.data, spentOf, deployments });
      setError('');
    })().catch((failure) => setError(failure.message));
  }, [windowName]);

  const view = useMemo(() => {
    if (!data) return null;
    const keyNames = new Map(data.keys.map((key) => [key.id, key.name]));
    const byModel = group(data.requests, (entry) => entry.requested_model).map(([model, entries]) => {
      const firstTokens = entries.flatMap((entry) => entry.attempts.filter((attempt) => attempt.first_token_ms !== null && attempt.first_token_ms !== undefined).map((attempt) => attempt.first_token_ms));
      const latencies = entries.map((entry) => entry.latency_ms);
      return { model, requests: entries.length, errors: entries.filter(isError).length, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), ttft50: percentile(firstTokens, 50), ttft90: percentile(firstTokens, 90) };
    });
    const byKey = group(data.requests, (entry) => entry.key_id).map(([keyId, entries]) => ({ key: keyNames.get(keyId) ?? keyId, requests: entries.length, errors: entries.filter(isError).length }));
    const attempts = new Map();
    for (const entry of data.requests) for (const attempt of entry.attempts) {
      if (!attempt.deployment) continue;
      const row = attempts.get(attempt.deployment) ?? { tries: 0, failures: 0, last: null };
      row.tries += 1;
      if (attempt.outcome !== 'success') {
        row.failures += 1;
        if (!row.last || entry.created_at > row.last.at) row.last = { at: entry.created_at, outcome: attempt.outcome.replace(/_/g, ' ') };
      }
      attempts.set(attempt.deployment, row);
    }
    const cooling = new Map(data.deployments.data.map((deployment) => [deployment.id, deployment.cooling]));
    const deployments = [...new Set([...attempts.keys(), ...cooling.keys()])].sort().map((id) => ({ id, ...(attempts.get(id) ?? { tries: 0, failures: 0, last: null }), cooling: cooling.get(id) }));
    const budgets = data.keys.filter((key) => key.budget_usd !== null && key.status === 'active').map((key) => ({ key, spent: data.spentOf(key) }));
    return { byModel, byKey, deployments, budgets };
  }, [data]);

  const state = (deployment) => {
    if (deployment.cooling === true) return html`<span class="badge revoked">cooling down</span>`;
    if (deployment.cooling === false) return html`<span class="badge active">in rotation</span>`;
    return html`<span class="muted" title="Scaled out, each worker keeps its own view: see switchboard_deployment_cooling in Prometheus">per worker</span>`;
  };

  return html`
    <form class="toolbar filters" aria-label="Health window" onSubmit=${(event) => event.preventDefault()}>
      <div class="field inline"><label for="health-window">Window</label>
        <select id="health-window" value=${windowName} onChange=${(event) => setWindowName(event.currentTarget.value)}>
          ${Object.entries(windows).map(([name, entry]) => html`<option value=${name}>${entry.label}</option>`)}
        </select></div>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${!view ? html`<p class="muted" role="status">Loading…</p>` : view.byModel.length === 0 && view.budgets.length === 0
      ? html`<${EmptyState} title="No requests in this window"><p>Send a request with one of your keys, or widen the window.</p><//>`
      : html`
      <div class="charts">
        <${BarChart} caption="Latency p90 by model (ms)" title="p90 latency" categoryName="Model" labels=${view.byModel.map((row) => row.model)} values=${view.byModel.map((row) => row.p90 ?? 0)} format=${ms} colour="#1d4ed8" summary="max" />
        <${BarChart} caption="Time to first token p90 by model (ms, streams)" title="p90 first token" categoryName="Model" labels=${view.byModel.map((row) => row.model)} values=${view.byModel.map((row) => row.ttft90 ?? 0)} format=${ms} colour="#7c3aed" summary="max" />
        <${BarChart} caption="Error rate by model (%)" title="Errors" categoryName="Model" labels=${view.byModel.map((row) => row.model)} values=${view.byModel.map((row) => (row.requests ? (100 * row.errors) / row.requests : 0))} format=${(value) => `${(Math.round(value * 10) / 10).toFixed(1)} %`} colour="#b42318" summary="max" />
      </div>
      <h2>By model</h2>
      <${TableWrap} label="By model"><table>
        <thead><tr><th scope="col">Requested model</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Error rate</th><th scope="col" class="num">Latency p50</th><th scope="col" class="num">p90</th><th scope="col" class="num">p99</th><th scope="col" class="num">First token p50</th><th scope="col" class="num">p90</th></tr></thead>
        <tbody>${view.byModel.map((row) => html`<tr key=${row.model}><td><code>${row.model}</code></td><td class="num">${count(row.requests)}</td><td class="num">${percent(row.errors, row.requests)}</td>
          <td class="num">${ms(row.p50)}</td><td class="num">${ms(row.p90)}</td><td class="num">${ms(row.p99)}</td><td class="num">${ms(row.ttft50)}</td><td class="num">${ms(row.ttft90)}</td></tr>`)}</tbody>
      </table><//>
      <h2>By key</h2>
      <${TableWrap} label="By key"><table>
        <thead><tr><th scope="col">Key</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Errors</th><th scope="col" class="num">Error rate</th></tr></thead>
        <tbody>${view.byKey.map((row) => html`<tr key=${row.key}><td>${row.key}</td><td class="num">${count(row.requests)}</td><td class="num">${count(row.errors)}</td><td class="num">${percent(row.errors, row.requests)}</td></tr>`)}</tbody>
      </table><//>
      <p class="muted small">Errors are answers of 400 or more that reached a worker (499, a client that left, is not one). Requests refused before the queue (limits, budgets, unknown keys) are counted in <code>switchboard_refusals_total</code> on <code>/metrics</code>.</p>
      <h2>Budgets</h2>
      ${view.budgets.length === 0 ? html`<p class="muted">No active key has a budget.</p>` : html`
      <${TableWrap} label="Budgets"><table>
        <thead><tr><th scope="col">Key</th><th scope="col" class="num">Budget</th><th scope="col" class="num">Spent this period</th><th scope="col" class="num">Remaining</th><th scope="col">State</th></tr></thead>
        <tbody>${view.budgets.map(({ key, spent }) => {
          const status = budgetState(spent, key.budget_usd);
          return html`<tr key=${key.id}><td>${key.name}</td><td class="num">${usd(key.budget_usd)} <span class="muted small">${periodNames[key.budget_period]}</span></td><td class="num">${usd(spent)}</td>
            <td class="num">${usd(Math.max(0, key.budget_usd - spent))}</td><td><span class=${`badge ${status.tone}`}>${status.text}</span></td></tr>`;
        })}</tbody>
      </table><//>`}
      <h2>Deployments</h2>
      ${view.deployments.length === 0 ? html`<p class="muted">No deployment was tried in this window.</p>` : html`
      <${TableWrap} label="Deployments"><table>
        <thead><tr><th scope="col">Deployment</th><th scope="col">State</th><th scope="col" class="num">Attempts</th><th scope="col" class="num">Failures</th><th scope="col">Last failure</th></tr></thead>
        <tbody>${view.deployments.map((row) => html`<tr key=${row.id}><td><code>${row.id}</code></td><td>${state(row)}</td><td class="num">${count(row.tries)}</td><td class="num">${count(row.failures)}</td>
          <td>${row.last ? `${row.last.outcome}, ${dateTime(row.last.at)}` : html`<span class="muted">none</span>`}</td></tr>`)}</tbody>
      </table><//>`}`}`;
}
