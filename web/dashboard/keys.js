// Keys: the table (search, status filter, sort), create, edit, rotate and revoke.
import { useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { ago, count, date, periodNames, periodStart, shortCount, usd } from './format.js';
import { html } from './html.js';
import { KeyFormDialog, RevokeDialog, SecretDialog } from './key-dialogs.js';
import { useLoader } from './loader.js';
import { EmptyState, SortHeader, sortRows, TableWrap } from './ui.js';

/** Spend in each key's current budget period (all time for keys without a period). */
async function periodSpend(keys) {
  const periods = [...new Set(keys.filter((key) => key.budget_period !== 'none').map((key) => key.budget_period))];
  const spend = new Map();
  await Promise.all(periods.map(async (period) => {
    const { data } = await api(`/usage?group_by=key&since=${encodeURIComponent(periodStart(period))}`);
    for (const row of data) spend.set(`${period}:${row.key_id}`, row.cost_usd);
  }));
  return (key) => (key.budget_period === 'none' ? key.spent_usd : spend.get(`${key.budget_period}:${key.id}`) ?? 0);
}

function Budget({ apiKey, spent }) {
  if (apiKey.budget_usd === null) return html`<span class="muted">No budget</span>`;
  const share = apiKey.budget_usd > 0 ? Math.min(1, spent / apiKey.budget_usd) : 1;
  return html`
    <span class="budget">
      <span>${usd(apiKey.budget_usd)}</span> <span class="muted small">${periodNames[apiKey.budget_period]}</span>
      <span class=${`bar ${share >= 1 ? 'full' : share >= 0.8 ? 'high' : ''}`} aria-hidden="true"><span style=${`width:${Math.round(share * 100)}%`}></span></span>
    </span>`;
}

function Limits({ apiKey }) {
  const parts = [];
  if (apiKey.rpm !== null) parts.push(`${shortCount(apiKey.rpm)} rpm`);
  if (apiKey.tpm !== null) parts.push(`${shortCount(apiKey.tpm)} tpm`);
  if (apiKey.max_concurrent !== null) parts.push(`${count(apiKey.max_concurrent)} at once`);
  return parts.length ? parts.join(' · ') : html`<span class="muted">No limits</span>`;
}

/** What the signed-in person may do with keys: viewers read only, members work within their projects. */
export function keyPermissions(me) {
  if (me.role === 'viewer') return { change: false };
  if (me.role === 'member') return { change: me.projects.length > 0, projectChoices: me.projects };
  return { change: true };
}

export function KeysPage({ notify, me }) {
  const allowed = keyPermissions(me);
  const [search, setSearch] = useState('');
  const [status, setStatus] = useState('active');
  const [sort, setSort] = useState({ field: 'created_at', direction: 'desc' });
  const [dialog, setDialog] = useState(null);

  const { data, error, reload: load } = useLoader(async () => {
    const { data: keyList } = await api('/keys');
    return { keys: keyList, spentOf: await periodSpend(keyList) };
  });
  const keys = data?.keys ?? null;
  const spentOf = data?.spentOf ?? ((key) => key.spent_usd);

  const close = () => setDialog(null);
  async function create(fields) {
    const created = await api('/keys', { method: 'POST', body: fields });
    setDialog({ kind: 'secret', created });
    load();
  }
  async function save(apiKey, fields) {
    await api(`/keys/${encodeURIComponent(apiKey.id)}`, { method: 'PATCH', body: fields });
    close();
    notify(`Saved key “${fields.name}”.`);
    load();
  }
  async function revoke(apiKey) {
    await api(`/keys/${encodeURIComponent(apiKey.id)}`, { method: 'DELETE' });
    close();
    notify(`Revoked key “${apiKey.name}” (${apiKey.key_hint}).`);
    load();
  }
  async function rotate(apiKey) {
    try {
      const created = await api(`/keys/${encodeURIComponent(apiKey.id)}/rotate`, { method: 'POST' });
      setDialog({ kind: 'secret', created, replaced: apiKey });
      load();
    } catch (failure) {
      notify(`Rotation failed: ${failure.message}`);
    }
  }

  if (error && !keys) return html`<p class="error" role="alert">Could not load the keys: ${error}</p>`;
  if (!keys) return html`<p class="muted" role="status">Loading keys…</p>`;

  const needle = search.trim().toLowerCase();
  const visible = sortRows(
    keys.filter((key) => (status === 'all' || key.status === status) && (!needle || key.name.toLowerCase().includes(needle) || key.key_hint.toLowerCase().includes(needle))),
    sort,
    sort.field === 'spent' ? spentOf : sort.field === 'name' ? (key) => key.name.toLowerCase() : undefined,
  );
  const header = (field, label, numeric) => html`<${SortHeader} field=${field} label=${label} sort=${sort} onSort=${setSort} numeric=${numeric} />`;

  return html`
    <div class="toolbar">
      <div class="field inline">
        <label for="key-search">Search keys</label>
        <input id="key-search" type="search" placeholder="Name or key hint" value=${search} onInput=${(event) => setSearch(event.currentTarget.value)} />
      </div>
      <div class="field inline">
        <label for="key-status">Status</label>
        <select id="key-status" value=${status} onChange=${(event) => setStatus(event.currentTarget.value)}>
          <option value="active">Active</option>
          <option value="revoked">Revoked</option>
          <option value="all">All</option>
        </select>
      </div>
      ${allowed.change
        ? html`<button type="button" class="primary push" onClick=${() => setDialog({ kind: 'create' })}>Create key</button>`
        : html`<p class="muted push">${me.role === 'viewer' ? 'Read only: your role is viewer.' : 'You belong to no project yet, so you cannot create keys; ask an admin.'}</p>`}
    </div>
    ${keys.length === 0
      ? html`<${EmptyState} title="No keys yet">
          ${allowed.change
            ? html`<p>Create a key, give it a budget or rate limits if you like, then send requests to <code>POST /v1/chat/completions</code> with <code>Authorization: Bearer sk-service-…</code>.</p>
              <button type="button" class="primary" onClick=${() => setDialog({ kind: 'create' })}>Create your first key</button>`
            : html`<p>${me.role === 'member' ? 'Keys of your projects appear here.' : 'Keys appear here once an admin or member creates them.'}</p>`}
        <//>`
      : visible.length === 0
        ? html`<${EmptyState} title="No keys match"><p>Clear the search or choose another status to see more keys.</p><//>`
        : html`
          <${TableWrap} label="API keys">
            <table class="keys cards">
              <caption class="visually-hidden">API keys, ${visible.length} shown</caption>
              <thead><tr>
                ${header('name', 'Name')}
                <th scope="col">Key</th>
                ${header('created_at', 'Created')}
                ${header('status', 'Status')}
                ${header('budget_usd', 'Budget', true)}
                ${header('spent', 'Spent', true)}
                <th scope="col">Limits</th>
                ${header('last_used_at', 'Last used')}
                <th scope="col"><span class="visually-hidden">Actions</span></th>
              </tr></thead>
              <tbody>
                ${visible.map((key) => html`
                  <tr key=${key.id} class=${key.status}>
                    <th scope="row" class="name">${key.name}</th>
                    <td data-label="Key"><code class="hint-code">${key.key_hint}</code></td>
                    <td data-label="Created">${date(key.created_at)}</td>
                    <td data-label="Status"><span class=${`badge ${key.status}`}>${key.status === 'active' ? 'Active' : 'Revoked'}</span></td>
                    <td class="num" data-label="Budget"><${Budget} apiKey=${key} spent=${spentOf(key)} /></td>
                    <td class="num" data-label="Spent" title=${`All time: ${usd(key.spent_usd)}`}>${usd(spentOf(key))}</td>
                    <td class="wrap" data-label="Limits"><${Limits} apiKey=${key} /></td>
                    <td data-label="Last used" title=${key.last_used_at ?? ''}>${ago(key.last_used_at)}</td>
                    <td class="actions-cell">
                      ${allowed.change && key.status === 'active' && html`<div class="row-actions">
                        <button type="button" onClick=${() => setDialog({ kind: 'edit', key })} aria-label=${`Edit ${key.name} (${key.key_hint})`}>Edit</button>
                        <button type="button" onClick=${() => rotate(key)} aria-label=${`Rotate ${key.name} (${key.key_hint})`}>Rotate</button>
                        <button type="button" class="danger-text" onClick=${() => setDialog({ kind: 'revoke', key })} aria-label=${`Revoke ${key.name} (${key.key_hint})`}>Revoke</button></div>`}
                    </td>
                  </tr>`)}
              </tbody>
            </table>
          <//>`}
    ${dialog?.kind === 'create' && html`<${KeyFormDialog} onSubmit=${create} onClose=${close} projectChoices=${allowed.projectChoices} />`}
    ${dialog?.kind === 'edit' && html`<${KeyFormDialog} existing=${dialog.key} onSubmit=${(fields) => save(dialog.key, fields)} onClose=${close} projectChoices=${allowed.projectChoices} />`}
    ${dialog?.kind === 'revoke' && html`<${RevokeDialog} apiKey=${dialog.key} onConfirm=${() => revoke(dialog.key)} onClose=${close} />`}
    ${dialog?.kind === 'secret' && html`<${SecretDialog} created=${dialog.created} replaced=${dialog.replaced}
      onRevokeReplaced=${() => setDialog({ kind: 'revoke', key: dialog.replaced })} onClose=${close} />`}`;
}
