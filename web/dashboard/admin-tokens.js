// A user's admin tokens (sbat_…): the admin API with that user's role and projects, for automation
// that should not hold the root token. The secret is shown once; removing the user revokes them all.
import { useCallback, useEffect, useRef, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { date } from './format.js';
import { html } from './html.js';
import { copyText } from './key-dialogs.js';
import { Dialog } from './ui.js';

export function AdminTokensDialog({ user, canChange, onClose }) {
  const [tokens, setTokens] = useState(null);
  const [name, setName] = useState('');
  const [created, setCreated] = useState(null);
  const [copied, setCopied] = useState('');
  const [error, setError] = useState('');
  const secret = useRef(null);

  const load = useCallback(async () => {
    try {
      setTokens((await api(`/admin-tokens?user_id=${encodeURIComponent(user.id)}`)).data);
    } catch (failure) {
      setError(failure.message);
    }
  }, [user.id]);
  useEffect(() => {
    load();
  }, [load]);

  async function create(event) {
    event.preventDefault();
    setError('');
    try {
      setCreated(await api('/admin-tokens', { method: 'POST', body: { user_id: user.id, name: name.trim() } }));
      setName('');
      load();
    } catch (failure) {
      setError(failure.message);
    }
  }
  async function revoke(token) {
    setError('');
    try {
      await api(`/admin-tokens/${encodeURIComponent(token.id)}`, { method: 'DELETE' });
      load();
    } catch (failure) {
      setError(failure.message);
    }
  }

  const active = (tokens ?? []).filter((token) => token.status === 'active');
  return html`
    <${Dialog} title=${`Admin tokens of ${user.email}`} onClose=${onClose} wide>
      <p>Each token calls the admin API (<code>Authorization: Bearer sbat_…</code>) with ${user.email}'s role and projects, read on every use.</p>
      ${created && html`
        <p class="warning" id="token-warning"><strong>Copy this token now.</strong> This is the only time it is shown; the gateway keeps only a hash of it.</p>
        <label for="new-admin-token">Admin token “${created.name}”</label>
        <div class="secret-row">
          <input id="new-admin-token" ref=${secret} class="secret" readonly value=${created.token} aria-describedby="token-warning" onFocus=${(event) => event.currentTarget.select()} />
          <button type="button" class="primary" onClick=${async () => setCopied((await copyText(created.token, secret.current)) ? 'Copied to the clipboard.' : 'Select the token and copy it by hand.')}>Copy</button>
        </div>
        <p class="hint" role="status">${copied}</p>`}
      <h3 class="tokens-heading">Active tokens</h3>
      ${tokens === null ? html`<p class="muted" role="status">Loading tokens…</p>` : active.length === 0 ? html`<p class="muted">No active tokens.</p>` : html`
        <table class="compact">
          <caption class="visually-hidden">Active admin tokens of ${user.email}</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Token</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${active.map((token) => html`
            <tr key=${token.id}>
              <th scope="row">${token.name}</th>
              <td><code class="hint-code">${token.hint}</code></td>
              <td>${date(token.created_at)}</td>
              <td>${canChange && html`<button type="button" class="danger-text" onClick=${() => revoke(token)} aria-label=${`Revoke admin token ${token.name}`}>Revoke</button>`}</td>
            </tr>`)}
          </tbody>
        </table>`}
      ${canChange && html`
        <form class="toolbar token-form" onSubmit=${create}>
          <div class="field inline"><label for="admin-token-name">New token name</label><input id="admin-token-name" required maxlength="200" placeholder="ci deploys" value=${name} onInput=${(event) => setName(event.currentTarget.value)} /></div>
          <button type="submit">Create token</button>
        </form>`}
      ${error && html`<p class="error" role="alert">${error}</p>`}
      <div class="actions"><button type="button" class="primary" onClick=${onClose}>Done</button></div>
    <//>`;
}
