// Users (admins change them, viewers read them): who may use the dashboard and the admin API, with which role and projects.
// Removing a user ends their dashboard sessions on every ingress at once and revokes their admin tokens.
import { useState } from '../vendor/hooks.js';
import { AdminTokensDialog } from './admin-tokens.js';
import { api } from './api.js';
import { date } from './format.js';
import { html } from './html.js';
import { useLoader } from './loader.js';
import { Dialog, EmptyState, TableWrap } from './ui.js';

export const roleNames = { admin: 'Admin', member: 'Member', viewer: 'Viewer' };
const roleHelp = {
  admin: 'Everything: keys, projects, users, admin tokens and the audit log.',
  member: 'Keys and usage of the projects chosen below; nothing else changes.',
  viewer: 'Reads everything except secrets; changes nothing.',
};

function UserDialog({ existing, projects, onSubmit, onClose }) {
  const [values, setValues] = useState({ email: existing?.email ?? '', name: existing?.name ?? '', role: existing?.role ?? 'viewer', projects: existing?.projects ?? [] });
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const set = (field) => (event) => setValues({ ...values, [field]: event.currentTarget.value });
  const toggle = (id) => setValues({ ...values, projects: values.projects.includes(id) ? values.projects.filter((item) => item !== id) : [...values.projects, id] });

  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setError('');
    try {
      const fields = { name: values.name.trim() === '' ? null : values.name.trim(), role: values.role, projects: values.role === 'member' ? values.projects : [] };
      await onSubmit(existing ? fields : { ...fields, email: values.email.trim() });
    } catch (failure) {
      setError(failure.message);
      setBusy(false);
    }
  }

  return html`
    <${Dialog} title=${existing ? `Edit ${existing.email}` : 'Add a user'} onClose=${onClose}>
      <form method="dialog" onSubmit=${submit} class="key-form">
        ${!existing && html`<div class="field"><label for="user-email">Email</label><input id="user-email" type="email" required value=${values.email} onInput=${set('email')} aria-describedby="user-email-help" />
          <p class="hint" id="user-email-help">Their single sign-on email; the first sign-in links the account.</p></div>`}
        <div class="field"><label for="user-name">Name</label><input id="user-name" maxlength="200" value=${values.name} onInput=${set('name')} /></div>
        <div class="field">
          <label for="user-role">Role</label>
          <select id="user-role" value=${values.role} onChange=${set('role')} aria-describedby="user-role-help">
            ${Object.entries(roleNames).map(([role, name]) => html`<option value=${role}>${name}</option>`)}
          </select>
          <p class="hint" id="user-role-help">${roleHelp[values.role]}</p>
        </div>
        ${values.role === 'member' && html`
          <fieldset class="choices">
            <legend>Projects</legend>
            ${projects.length === 0 && html`<p class="hint">No projects yet: create one on the Projects page first.</p>`}
            ${projects.map((project) => html`
              <label class="choice"><input type="checkbox" checked=${values.projects.includes(project.id)} onChange=${() => toggle(project.id)} /> ${project.name} <code class="muted small">${project.id}</code></label>`)}
          </fieldset>`}
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <div class="actions">
          <button type="button" onClick=${onClose}>Cancel</button>
          <button class="primary" type="submit" disabled=${busy}>${existing ? 'Save changes' : 'Add user'}</button>
        </div>
      </form>
    <//>`;
}

function RemoveDialog({ user, onConfirm, onClose }) {
  const [error, setError] = useState('');
  return html`
    <${Dialog} title=${`Remove ${user.email}?`} onClose=${onClose}>
      <p>Their dashboard sessions end at once, on every ingress, and their admin tokens are revoked. The audit log keeps their past actions.</p>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      <div class="actions">
        <button type="button" onClick=${onClose}>Cancel</button>
        <button type="button" class="danger" onClick=${() => onConfirm().catch((failure) => setError(failure.message))}>Remove user</button>
      </div>
    <//>`;
}

export function UsersPage({ notify, me }) {
  const admin = me.role === 'admin';
  const [showRemoved, setShowRemoved] = useState(false);
  const [dialog, setDialog] = useState(null);
  const { data, error, reload: load } = useLoader(async () => {
    const [userList, projectList] = await Promise.all([api('/users'), api('/projects')]);
    return { users: userList.data, projects: projectList.data };
  });
  const users = data?.users ?? null;
  const projects = data?.projects ?? [];

  const close = () => setDialog(null);
  async function save(fields) {
    if (dialog.user) await api(`/users/${encodeURIComponent(dialog.user.id)}`, { method: 'PATCH', body: fields });
    else await api('/users', { method: 'POST', body: fields });
    close();
    notify(dialog.user ? `Saved ${dialog.user.email}; in effect on their next request.` : `Added ${fields.email}.`);
    load();
  }
  async function remove(user) {
    await api(`/users/${encodeURIComponent(user.id)}`, { method: 'DELETE' });
    close();
    notify(`Removed ${user.email}; their sessions have ended.`);
    load();
  }

  if (error && !users) return html`<p class="error" role="alert">Could not load the users: ${error}</p>`;
  if (!users) return html`<p class="muted" role="status">Loading users…</p>`;
  const projectName = new Map(projects.map((project) => [project.id, project.name]));
  const visible = users.filter((user) => showRemoved || !user.removed_at);
  return html`
    <div class="toolbar">
      <label class="choice"><input type="checkbox" checked=${showRemoved} onChange=${(event) => setShowRemoved(event.currentTarget.checked)} /> Show removed users</label>
      ${admin
        ? html`<button type="button" class="primary push" onClick=${() => setDialog({ kind: 'edit' })}>Add user</button>`
        : html`<p class="muted push">Read only: only an admin can add, change or remove users.</p>`}
    </div>
    ${visible.length === 0
      ? html`<${EmptyState} title="No users yet"><p>People appear here when they first sign in with single sign-on, or when you add them.</p><//>`
      : html`
        <${TableWrap} label="Users">
          <table class="cards users">
            <caption class="visually-hidden">Dashboard and admin API users, ${visible.length} shown</caption>
            <thead><tr><th scope="col">User</th><th scope="col">Role</th><th scope="col">Projects</th><th scope="col">Sign-in</th><th scope="col">Added</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${visible.map((user) => html`
                <tr key=${user.id} class=${user.removed_at ? 'revoked' : ''}>
                  <th scope="row" class="name">${user.email}${user.name && user.name !== user.email && html`<span class="muted small block">${user.name}</span>`}</th>
                  <td data-label="Role"><span class=${`badge role ${user.role}`}>${roleNames[user.role]}</span></td>
                  <td data-label="Projects" class="wrap">${user.role !== 'member' ? html`<span class="muted">all (${user.role === 'admin' ? 'admin' : 'read only'})</span>` : user.projects.length === 0 ? html`<span class="muted">none</span>` : user.projects.map((id) => projectName.get(id) ?? id).join(', ')}</td>
                  <td data-label="Sign-in">${user.sso_linked ? 'Single sign-on' : html`<span class="muted">Not signed in yet</span>`}</td>
                  <td data-label="Added">${date(user.created_at)}</td>
                  <td data-label="Status">${user.removed_at ? html`<span class="badge revoked">Removed ${date(user.removed_at)}</span>` : html`<span class="badge active">Active</span>`}</td>
                  <td class="actions-cell">
                    ${!user.removed_at && html`<div class="row-actions">
                      <button type="button" onClick=${() => setDialog({ kind: 'tokens', user })} aria-label=${`Admin tokens of ${user.email}`}>Tokens</button>
                      ${admin && html`<button type="button" onClick=${() => setDialog({ kind: 'edit', user })} aria-label=${`Edit ${user.email}`}>Edit</button>`}
                      ${admin && user.id !== me.id && html`<button type="button" class="danger-text" onClick=${() => setDialog({ kind: 'remove', user })} aria-label=${`Remove ${user.email}`}>Remove</button>`}
                    </div>`}
                  </td>
                </tr>`)}
            </tbody>
          </table>
        <//>`}
    ${dialog?.kind === 'edit' && html`<${UserDialog} existing=${dialog.user} projects=${projects} onSubmit=${save} onClose=${close} />`}
    ${dialog?.kind === 'tokens' && html`<${AdminTokensDialog} user=${dialog.user} canChange=${admin} onClose=${close} />`}
    ${dialog?.kind === 'remove' && html`<${RemoveDialog} user=${dialog.user} onConfirm=${() => remove(dialog.user)} onClose=${close} />`}`;
}
