// The audit log: every admin action and sign-in, newest first, with who, when, from where and
// what changed. Filters go to the server (GET /audit); "Show older" pages back with `before`.
import { useCallback, useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { dateTime } from './format.js';
import { html } from './html.js';
import { EmptyState, TableWrap } from './ui.js';

const pageSize = 50;
const families = [
  ['', 'All actions'],
  ['session', 'Sign-ins and sign-outs'],
  ['key', 'Keys'],
  ['project', 'Projects'],
  ['alert', 'Alerts'],
  ['user', 'Users'],
  ['admin_token', 'Admin tokens'],
];
const actorKinds = { root: 'shared root token', user: 'user', token: 'per-user token', anonymous: 'not signed in' };
const blank = { actor: '', action: '', since: '', until: '' };

function query(filters, before) {
  const parameters = new URLSearchParams({ limit: String(pageSize) });
  if (filters.actor.trim()) parameters.set('actor', filters.actor.trim());
  if (filters.action) parameters.set('action', filters.action);
  // Dates are whole UTC days; "until" includes its day.
  if (filters.since) parameters.set('since', `${filters.since}T00:00:00Z`);
  if (filters.until) parameters.set('until', new Date(Date.parse(`${filters.until}T00:00:00Z`) + 86400000).toISOString());
  if (before) parameters.set('before', before);
  return `/audit?${parameters}`;
}

/** A recorded value as text: ids of users, keys and projects by name, lists comma-separated. */
function shown(value, names) {
  if (value === undefined) return '—';
  if (value === null) return 'none';
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.map((item) => shown(item, names)).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return names.get(value) ?? String(value);
}

function Changes({ changes, names }) {
  const entries = Object.entries(changes ?? {});
  if (entries.length === 0) return html`<span class="muted">—</span>`;
  return html`<ul class="changes">${entries.map(([field, change]) => html`
    <li><span class="field-name">${field}</span>: ${'from' in change ? html`<span class="from">${shown(change.from, names)}</span> → ` : ''}<span class="to">${shown(change.to, names)}</span></li>`)}</ul>`;
}

export function AuditPage() {
  const [form, setForm] = useState(blank);
  const [filters, setFilters] = useState(blank);
  const [entries, setEntries] = useState(null);
  const [more, setMore] = useState(null);
  const [error, setError] = useState('');
  const [names, setNames] = useState(new Map());
  const set = (field) => (event) => setForm({ ...form, [field]: event.currentTarget.value });

  const load = useCallback(async (before) => {
    try {
      const { data, next_before: next } = await api(query(filters, before));
      setEntries((current) => (before ? [...(current ?? []), ...data] : data));
      setMore(next ?? null);
      setError('');
    } catch (failure) {
      setError(failure.message);
    }
  }, [filters]);
  useEffect(() => {
    load();
  }, [load]);
  // Targets by name where we can: users by email, keys and projects by name (ids stay in the tooltip).
  useEffect(() => {
    Promise.all(['/users', '/keys', '/projects'].map((path) => api(path).then(({ data }) => data, () => [])))
      .then(([users, keys, projects]) => setNames(new Map([...users.map((user) => [user.id, user.email]), ...keys.map((key) => [key.id, key.name]), ...projects.map((project) => [project.id, project.name])])));
  }, []);

  function apply(event) {
    event.preventDefault();
    setEntries(null);
    setFilters(form);
  }
  function clear() {
    setForm(blank);
    setEntries(null);
    setFilters(blank);
  }

  return html`
    <form class="toolbar filters" onSubmit=${apply} aria-label="Filter the audit log">
      <div class="field inline"><label for="audit-actor">Who</label><input id="audit-actor" type="search" placeholder="Email or id" value=${form.actor} onInput=${set('actor')} /></div>
      <div class="field inline">
        <label for="audit-action">Action</label>
        <select id="audit-action" value=${form.action} onChange=${set('action')}>${families.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select>
      </div>
      <div class="field inline"><label for="audit-since">From (UTC)</label><input id="audit-since" type="date" value=${form.since} onInput=${set('since')} /></div>
      <div class="field inline"><label for="audit-until">To (UTC)</label><input id="audit-until" type="date" value=${form.until} onInput=${set('until')} /></div>
      <button type="submit" class="primary">Filter</button>
      <button type="button" onClick=${clear}>Clear</button>
    </form>
    ${error && html`<p class="error" role="alert">Could not load the audit log: ${error}</p>`}
    ${!entries && !error && html`<p class="muted" role="status">Loading the audit log…</p>`}
    ${entries && entries.length === 0 && html`<${EmptyState} title="Nothing recorded"><p>No entry matches these filters.</p><//>`}
    ${entries && entries.length > 0 && html`
      <${TableWrap} label="Audit log">
        <table class="cards audit">
          <caption class="visually-hidden">Audit log entries, newest first, ${entries.length} shown</caption>
          <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">From</th><th scope="col">What changed</th><th scope="col">Outcome</th></tr></thead>
          <tbody>
            ${entries.map((entry) => html`
              <tr key=${entry.id} class=${entry.outcome === 'failure' ? 'failed' : ''}>
                <td data-label="When" title=${entry.at}>${dateTime(entry.at)}</td>
                <th scope="row" data-label="Who" class="name">${entry.actor.label || html`<span class="muted">unknown</span>`}<span class="muted small block">${actorKinds[entry.actor.kind] ?? entry.actor.kind}</span></th>
                <td data-label="Action"><code>${entry.action}</code></td>
                <td data-label="Target" title=${entry.target_id ?? ''}>${entry.target_id
                  ? html`<span class="muted small">${entry.target_type}</span> ${names.has(entry.target_id) ? names.get(entry.target_id) : html`<code>${entry.target_id}</code>`}`
                  : html`<span class="muted">—</span>`}</td>
                <td data-label="From"><code>${entry.client || '—'}</code></td>
                <td data-label="What changed" class="wrap"><${Changes} changes=${entry.changes} names=${names} /></td>
                <td data-label="Outcome"><span class=${`badge ${entry.outcome === 'failure' ? 'revoked' : 'active'}`}>${entry.outcome === 'failure' ? 'Failed' : 'Done'}</span></td>
              </tr>`)}
          </tbody>
        </table>
      <//>
      ${more && html`<div class="actions"><button type="button" onClick=${() => load(more)}>Show older entries</button></div>`}`}`;
}
