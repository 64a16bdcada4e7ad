// Projects: keys grouped under a shared budget, period, rate limits and budget alerts.
import { useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { count, usd } from './format.js';
import { html } from './html.js';
import { alertLines, parseAlerts } from './key-dialogs.js';
import { useLoader } from './loader.js';
import { Dialog, EmptyState, TableWrap } from './ui.js';

const blank = { name: '', budget_usd: '', budget_period: 'monthly', rpm: '', tpm: '', alerts: '' };
const text = (value) => (value === null || value === undefined ? '' : String(value));

function ProjectDialog({ existing, onSubmit, onClose }) {
  const [values, setValues] = useState(existing
    ? { name: existing.name, budget_usd: text(existing.budget_usd), budget_period: existing.budget_period, rpm: text(existing.rpm), tpm: text(existing.tpm), alerts: alertLines(existing.alerts) }
    : blank);
  const [error, setError] = useState('');
  const set = (field) => (event) => setValues({ ...values, [field]: event.currentTarget.value });
  const number = (value) => (value.trim() === '' ? null : Number(value));

  async function submit(event) {
    event.preventDefault();
    try {
      const budget = number(values.budget_usd);
      await onSubmit({
        name: values.name.trim(), budget_usd: budget, budget_period: budget === null ? 'none' : values.budget_period,
        rpm: number(values.rpm), tpm: number(values.tpm), alerts: parseAlerts(values.alerts),
      });
    } catch (failure) {
      setError(failure.message);
    }
  }

  return html`
    <${Dialog} title=${existing ? `Edit project “${existing.name}”` : 'Create a project'} onClose=${onClose}>
      <form method="dialog" onSubmit=${submit} class="key-form">
        <div class="field"><label for="project-name">Project name</label><input id="project-name" required maxlength="200" value=${values.name} onInput=${set('name')} /></div>
        <div class="field-row">
          <div class="field"><label for="project-budget">Project budget (USD)</label><input id="project-budget" type="number" min="0" step="any" value=${values.budget_usd} onInput=${set('budget_usd')} /></div>
          <div class="field">
            <label for="project-period">Project budget period</label>
            <select id="project-period" value=${values.budget_period} onChange=${set('budget_period')} disabled=${values.budget_usd.trim() === ''}>
              <option value="daily">Per day</option><option value="weekly">Per week (from Monday)</option><option value="monthly">Per month</option><option value="none">In total (never resets)</option>
            </select>
          </div>
        </div>
        <div class="field-row">
          <div class="field"><label for="project-rpm">Project requests per minute</label><input id="project-rpm" type="number" min="1" step="1" value=${values.rpm} onInput=${set('rpm')} /></div>
          <div class="field"><label for="project-tpm">Project tokens per minute</label><input id="project-tpm" type="number" min="1" step="1" value=${values.tpm} onInput=${set('tpm')} /></div>
        </div>
        <p class="hint">Requests of the project's keys must fit both their key's limits and these, summed over all its keys. Empty: no limit.</p>
        <div class="field">
          <label for="project-alerts">Project budget alerts</label>
          <textarea id="project-alerts" rows="3" value=${values.alerts} onInput=${set('alerts')} placeholder="80=https://hooks.example/budget"></textarea>
          <p class="hint">One per line: percent of the budget=webhook URL; each fires once per budget period, signed with HMAC-SHA256.</p>
        </div>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <div class="actions">
          <button type="button" onClick=${onClose}>Cancel</button>
          <button class="primary" type="submit">${existing ? 'Save changes' : 'Create project'}</button>
        </div>
      </form>
    <//>`;
}

export function ProjectsPage({ notify, me }) {
  const admin = me.role === 'admin';
  const [dialog, setDialog] = useState(null);
  const { data: projects, error, reload: load } = useLoader(async () => (await api('/projects')).data);

  const close = () => setDialog(null);
  const save = async (fields) => {
    if (dialog.project) await api(`/projects/${encodeURIComponent(dialog.project.id)}`, { method: 'PATCH', body: fields });
    else await api('/projects', { method: 'POST', body: fields });
    close();
    notify?.(dialog.project ? 'Project saved; in effect on the next request.' : 'Project created. Add keys to it with their project id.');
    await load();
  };
  const remove = async (project) => {
    if (!confirm(`Delete project “${project.name}”? Its keys stay, without the project's limits.`)) return;
    await api(`/projects/${encodeURIComponent(project.id)}`, { method: 'DELETE' });
    await load();
  };

  if (error) return html`<p class="error" role="alert">Could not load projects: ${error}</p>`;
  if (!projects) return html`<p class="muted" role="status">Loading projects…</p>`;
  const limit = (value) => (value === null ? html`<span class="muted">none</span>` : count(value));
  return html`
    ${admin
      ? html`<div class="toolbar"><button type="button" class="primary push" onClick=${() => setDialog({})}>Create project</button></div>`
      : html`<p class="muted">${me.role === 'member' ? 'Your projects. Only an admin can create or change projects.' : 'Read only: your role is viewer.'}</p>`}
    ${projects.length === 0
      ? html`<${EmptyState} title="No projects yet"><p>A project gives several keys one shared budget, rate limits and alerts.</p><//>`
      : html`
        <${TableWrap} label="Projects">
          <table class="cards">
            <caption class="visually-hidden">Projects with their budget, spend this period and limits</caption>
            <thead><tr><th scope="col">Project</th><th scope="col">Id</th><th scope="col" class="num">Budget</th><th scope="col" class="num">Spent</th>
              <th scope="col" class="num">RPM</th><th scope="col" class="num">TPM</th><th scope="col">Alerts</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${projects.map((project) => html`
                <tr key=${project.id}>
                  <th scope="row" data-label="Project">${project.name}</th>
                  <td data-label="Id"><code>${project.id}</code></td>
                  <td class="num" data-label="Budget">${project.budget_usd === null ? html`<span class="muted">none</span>` : `${usd(project.budget_usd)} ${project.budget_period === 'none' ? 'in total' : project.budget_period}`}</td>
                  <td class="num" data-label="Spent">${usd(project.spent_usd)}</td>
                  <td class="num" data-label="RPM">${limit(project.rpm)}</td>
                  <td class="num" data-label="TPM">${limit(project.tpm)}</td>
                  <td data-label="Alerts">${project.alerts.length === 0 ? html`<span class="muted">none</span>` : project.alerts.map((alert) => `${alert.threshold_percent}%`).join(', ')}</td>
                  <td data-label="Actions">${admin && html`
                    <button type="button" onClick=${() => setDialog({ project })}>Edit</button>
                    <button type="button" class="danger" onClick=${() => remove(project)}>Delete</button>`}
                  </td>
                </tr>`)}
            </tbody>
          </table>
        <//>`}
    ${dialog && html`<${ProjectDialog} existing=${dialog.project} onSubmit=${save} onClose=${close} />`}`;
}
