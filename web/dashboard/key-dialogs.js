// Dialogs of the keys page: the create/edit form, the one-time secret, the revoke confirmation.
import { useRef, useState } from '../vendor/hooks.js';
import { html } from './html.js';
import { Dialog } from './ui.js';

const blank = { name: '', budget_usd: '', budget_period: 'monthly', rpm: '', tpm: '', max_concurrent: '', allowed_models: '', expires_at: '', project_id: '', alerts: '' };

/** Alerts as the form shows them: one "percent=webhook URL" per line. */
export const alertLines = (alerts) => (alerts ?? []).map((alert) => `${alert.threshold_percent}=${alert.webhook_url}`).join('\n');

function formValues(key) {
  if (!key) return blank;
  const text = (value) => (value === null || value === undefined ? '' : String(value));
  return {
    name: key.name, budget_usd: text(key.budget_usd), budget_period: key.budget_period, rpm: text(key.rpm), tpm: text(key.tpm), max_concurrent: text(key.max_concurrent),
    allowed_models: (key.allowed_models ?? []).join(', '), expires_at: text(key.expires_at), project_id: text(key.project_id), alerts: alertLines(key.alerts),
  };
}

export function parseAlerts(text) {
  return text.split('\n').map((line) => line.trim()).filter(Boolean).map((line) => {
    const match = /^(\d+)\s*%?\s*=\s*(\S+)$/.exec(line);
    if (!match) throw new Error(`Alert lines look like 80=https://hooks.example/budget; “${line}” does not.`);
    return { threshold_percent: Number(match[1]), webhook_url: match[2] };
  });
}

/** Form fields as the admin API takes them; empty optional fields mean "no limit". */
function toRequest(values) {
  const number = (text) => (text.trim() === '' ? null : Number(text));
  const budget = number(values.budget_usd);
  return {
    name: values.name.trim(),
    budget_usd: budget,
    budget_period: budget === null ? 'none' : values.budget_period,
    rpm: number(values.rpm),
    tpm: number(values.tpm),
    max_concurrent: number(values.max_concurrent),
    allowed_models: values.allowed_models.trim() === '' ? null : values.allowed_models.split(',').map((model) => model.trim()).filter(Boolean),
    expires_at: values.expires_at.trim() === '' ? null : values.expires_at.trim(),
    project_id: values.project_id.trim() === '' ? null : values.project_id.trim(),
    alerts: parseAlerts(values.alerts),
  };
}

/** projectChoices: a member's projects, the only ones their keys may belong to. */
export function KeyFormDialog({ existing, onSubmit, onClose, projectChoices }) {
  const [values, setValues] = useState(() => {
    const initial = formValues(existing);
    return projectChoices?.length && !initial.project_id ? { ...initial, project_id: projectChoices[0] } : initial;
  });
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const set = (field) => (event) => setValues({ ...values, [field]: event.currentTarget.value });

  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setError('');
    try {
      await onSubmit(toRequest(values));
    } catch (failure) {
      setError(failure.message);
      setBusy(false);
    }
  }

  const limit = (field, label, help) => html`
    <div class="field">
      <label for=${`key-${field}`}>${label}</label>
      <input id=${`key-${field}`} type="number" inputmode="numeric" min="1" step="1" value=${values[field]} onInput=${set(field)} aria-describedby=${`key-${field}-help`} />
      <p class="hint" id=${`key-${field}-help`}>${help}</p>
    </div>`;

  return html`
    <${Dialog} title=${existing ? `Edit key “${existing.name}”` : 'Create a key'} onClose=${onClose}>
      <form method="dialog" onSubmit=${submit} class="key-form">
        <div class="field">
          <label for="key-name">Name</label>
          <input id="key-name" required maxlength="200" value=${values.name} onInput=${set('name')} aria-describedby="key-name-help" />
          <p class="hint" id="key-name-help">Who or what uses the key, for example “billing-service production”.</p>
        </div>
        <div class="field-row">
          <div class="field">
            <label for="key-budget_usd">Budget (USD)</label>
            <input id="key-budget_usd" type="number" inputmode="decimal" min="0" step="any" value=${values.budget_usd} onInput=${set('budget_usd')} aria-describedby="key-budget-help" />
          </div>
          <div class="field">
            <label for="key-budget_period">Budget period</label>
            <select id="key-budget_period" value=${values.budget_period} onChange=${set('budget_period')} disabled=${values.budget_usd.trim() === ''}>
              <option value="daily">Per day</option>
              <option value="weekly">Per week (from Monday)</option>
              <option value="monthly">Per month</option>
              <option value="none">In total (never resets)</option>
            </select>
          </div>
        </div>
        <p class="hint" id="key-budget-help">Leave the budget empty for no budget. Requests whose maximum cost no longer fits are refused with 402. Periods are counted in UTC.</p>
        <div class="field-row three">
          ${limit('rpm', 'Requests per minute', 'Empty: no limit.')}
          ${limit('tpm', 'Tokens per minute', 'Empty: no limit.')}
          ${limit('max_concurrent', 'Concurrent requests', 'Empty: no limit.')}
        </div>
        <div class="field">
          <label for="key-allowed_models">Allowed models</label>
          <input id="key-allowed_models" value=${values.allowed_models} onInput=${set('allowed_models')} aria-describedby="key-models-help" placeholder="svc/alpha, svc/claude-*" />
          <p class="hint" id="key-models-help">Comma-separated model ids or patterns (* matches anything). Empty: every model. Other models are refused with 403 and left out of /v1/models.</p>
        </div>
        <div class="field-row">
          <div class="field">
            <label for="key-expires_at">Expires at (UTC, ISO 8601)</label>
            <input id="key-expires_at" value=${values.expires_at} onInput=${set('expires_at')} placeholder="2027-01-01T00:00:00Z" aria-describedby="key-expiry-help" />
            <p class="hint" id="key-expiry-help">Empty: never. An expired key is refused with 401, like a revoked one.</p>
          </div>
          <div class="field">
            <label for="key-project_id">Project id</label>
            ${projectChoices
              ? html`<select id="key-project_id" value=${values.project_id} onChange=${set('project_id')} aria-describedby="key-project-help">
                  ${projectChoices.map((id) => html`<option value=${id}>${id}</option>`)}
                </select>`
              : html`<input id="key-project_id" value=${values.project_id} onInput=${set('project_id')} placeholder="proj_…" aria-describedby="key-project-help" />`}
            <p class="hint" id="key-project-help">${projectChoices ? 'Your keys belong to one of your projects; requests' : 'Requests'} must also fit the project's budget and limits (switchboard projects list).</p>
          </div>
        </div>
        <div class="field">
          <label for="key-alerts">Budget alerts</label>
          <textarea id="key-alerts" rows="3" value=${values.alerts} onInput=${set('alerts')} placeholder="80=https://hooks.example/budget" aria-describedby="key-alerts-help"></textarea>
          <p class="hint" id="key-alerts-help">One per line: percent of the budget=webhook URL. Each fires once per budget period as a POST signed with HMAC-SHA256 (header x-switchboard-signature).</p>
        </div>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <div class="actions">
          <button type="button" onClick=${onClose}>Cancel</button>
          <button class="primary" type="submit" disabled=${busy}>${existing ? 'Save changes' : 'Create key'}</button>
        </div>
      </form>
    <//>`;
}

export async function copyText(text, input) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // The Clipboard API needs a secure context; plain http on another host falls back to selection.
    input.select();
    return document.execCommand('copy');
  }
}

export function SecretDialog({ created, replaced, onRevokeReplaced, onClose }) {
  const [copied, setCopied] = useState('');
  const input = useRef(null);
  return html`
    <${Dialog} title=${replaced ? `New key for “${created.name}”` : `Key “${created.name}” created`} onClose=${onClose} wide>
      <p class="warning" id="secret-warning"><strong>Copy this key now.</strong> This is the only time the full key is shown; the gateway keeps only a hash of it. If you lose it, rotate or create a new key.</p>
      <label for="new-secret">Secret key</label>
      <div class="secret-row">
        <input id="new-secret" ref=${input} class="secret" readonly value=${created.key} aria-describedby="secret-warning" onFocus=${(event) => event.currentTarget.select()} />
        <button type="button" class="primary" onClick=${async () => setCopied((await copyText(created.key, input.current)) ? 'Copied to the clipboard.' : 'Select the key and copy it by hand.')}>Copy</button>
      </div>
      <p class="hint" role="status">${copied}</p>
      <p class="hint">Keep it in an environment variable or a secret manager, never in client-side code. Use it as <code>Authorization: Bearer sk-service-…</code> against <code>/v1/chat/completions</code>.</p>
      ${replaced && html`
        <p>The old key <code>${replaced.key_hint}</code> still works. Deploy the new key, then revoke the old one.</p>`}
      <div class="actions">
        ${replaced && html`<button type="button" class="danger" onClick=${onRevokeReplaced}>Revoke the old key…</button>`}
        <button type="button" class="primary" onClick=${onClose}>I have stored the key</button>
      </div>
    <//>`;
}

export function RevokeDialog({ apiKey, onConfirm, onClose }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  async function confirm() {
    setBusy(true);
    try {
      await onConfirm();
    } catch (failure) {
      setError(failure.message);
      setBusy(false);
    }
  }
  return html`
    <${Dialog} title=${`Revoke key “${apiKey.name}”?`} onClose=${onClose}>
      <p>Requests with <code>${apiKey.key_hint}</code> will fail at once with 401 on every gateway instance. This cannot be undone.</p>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      <div class="actions">
        <button type="button" onClick=${onClose}>Cancel</button>
        <button type="button" class="danger" onClick=${confirm} disabled=${busy}>Revoke key</button>
      </div>
    <//>`;
}
