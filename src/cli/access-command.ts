import { adminCall, CliError, resolveConnection, type Connection } from './admin-client.js';
import { parseCommandLine, positiveInteger } from './arguments.js';
import { orDash, table, time, type Column } from './format.js';

// Users, their admin tokens and the audit log from the CLI: a thin client of /admin/v1/users,
// /admin/v1/admin-tokens and /admin/v1/audit. Users may be named by id or by email.

export const accessHelp = `Users, roles and admin tokens (admin: everything; member: keys and usage of
their projects; viewer: read only)
  users list
  users add --email EMAIL --role admin|member|viewer [--name NAME] [--project ID ...]
  users set-role USER ROLE [--project ID ...]
                        Change a user's role (and a member's projects); in effect at once.
  users remove USER     Remove a user: their sessions end and their admin tokens stop working.
  admin-tokens create --user USER --name NAME
                        A per-user admin token (sbat_...) acting with the user's role. Printed
                        once; use it as SWITCHBOARD_ADMIN_TOKEN for the CLI or as a bearer token.
  admin-tokens list [--user USER]
  admin-tokens revoke ID
  USER is a user id (usr_...) or email.

Audit log
  audit [--actor ID|EMAIL] [--action ACTION|FAMILY.*] [--target ID] [--since TIME]
        [--until TIME] [--limit N] [--before ENTRY_ID]
                        Admin actions, newest first: who, when, from where, what changed.`;

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

interface User { id: string; email: string; name: string | null; role: string; projects: string[]; status: string; created_at: string; sso_linked: boolean }
interface AdminToken { id: string; user_id: string; name: string; hint: string; status: string; created_at: string; revoked_at: string | null; token?: string }
interface AuditEntry {
  id: string; at: string; actor: { kind: string; id: string; label: string }; action: string; target_type: string | null; target_id: string | null;
  client: string; changes: Record<string, { from?: unknown; to?: unknown }> | null; outcome: string;
}

const roleNames = ['admin', 'member', 'viewer'];

function checkRole(role: string | undefined, command: string): string {
  if (role === undefined) throw new CliError(`${command} needs a role: admin, member or viewer`);
  if (!roleNames.includes(role)) throw new CliError(`unknown role '${role}'; it must be admin, member or viewer`);
  return role;
}

/** A user id as given, or the id of the (not removed) user with this email. */
async function userId(connection: Connection, given: string | undefined, command: string): Promise<string> {
  if (!given) throw new CliError(`${command} needs a user (id or email); see switchboard users list`);
  if (!given.includes('@')) return given;
  const users = (await adminCall<{ data: User[] }>(connection, 'GET', '/users')).data;
  const found = users.find((user) => user.email === given.trim().toLowerCase() && user.status === 'active');
  if (!found) throw new CliError(`no user with email '${given}'; see switchboard users list`);
  return found.id;
}

function describeUser(user: User): string {
  return `${user.id} ${user.email} (${user.role}${user.role === 'member' ? `; projects: ${user.projects.join(', ') || 'none'}` : ''})`;
}

export async function usersCommand(args: string[], environment: NodeJS.ProcessEnv, io: Io, help: string): Promise<void> {
  const [sub, ...rest] = args;
  const options = { email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' }, project: { type: 'string', multiple: true } } as const;
  switch (sub) {
    case 'list': {
      const { values } = parseCommandLine(rest, {}, 0);
      if (values.help) return io.out(help);
      const list = await adminCall<{ data: User[] }>(resolveConnection(environment, values.url), 'GET', '/users');
      if (values.json) return io.out(JSON.stringify(list, null, 2));
      if (list.data.length === 0) return io.out('No users yet. Add one with: switchboard users add --email ana@example.com --role viewer');
      const columns: Column[] = [{ title: 'ID' }, { title: 'EMAIL' }, { title: 'NAME' }, { title: 'ROLE' }, { title: 'PROJECTS' }, { title: 'STATUS' }, { title: 'CREATED' }];
      return io.out(table(columns, list.data.map((u) => [u.id, u.email, orDash(u.name), u.role, u.projects.join(',') || '-', u.status, time(u.created_at)])));
    }
    case 'add': {
      const { values } = parseCommandLine(rest, options, 0);
      if (values.help) return io.out(help);
      if (!values.email) throw new CliError('users add needs --email, e.g. switchboard users add --email ana@example.com --role viewer');
      const body = { email: values.email, role: checkRole(values.role, 'users add'), ...(values.name ? { name: values.name } : {}), ...(values.project ? { projects: values.project } : {}) };
      const user = await adminCall<User>(resolveConnection(environment, values.url), 'POST', '/users', body);
      return io.out(values.json ? JSON.stringify(user, null, 2) : `Added user ${describeUser(user)}.`);
    }
    case 'set-role': {
      const { values, positionals } = parseCommandLine(rest, { project: options.project }, 2);
      if (values.help) return io.out(help);
      const connection = resolveConnection(environment, values.url);
      const id = await userId(connection, positionals[0], 'users set-role');
      const body = { role: checkRole(positionals[1], 'users set-role'), ...(values.project ? { projects: values.project } : {}) };
      const user = await adminCall<User>(connection, 'PATCH', `/users/${encodeURIComponent(id)}`, body);
      return io.out(values.json ? JSON.stringify(user, null, 2) : `Updated user ${describeUser(user)}; in effect now.`);
    }
    case 'remove': {
      const { values, positionals } = parseCommandLine(rest, {}, 1);
      if (values.help) return io.out(help);
      const connection = resolveConnection(environment, values.url);
      const id = await userId(connection, positionals[0], 'users remove');
      const user = await adminCall<User>(connection, 'DELETE', `/users/${encodeURIComponent(id)}`);
      return io.out(values.json ? JSON.stringify(user, null, 2) : `Removed user ${user.id} (${user.email}); their sessions and admin tokens no longer work.`);
    }
    default:
      if (sub === undefined || sub === '--help' || sub === '-h') return io.out(help);
      throw new CliError(`unknown command 'users ${sub}'. See 'switchboard --help'.`);
  }
}

export async function adminTokensCommand(args: string[], environment: NodeJS.ProcessEnv, io: Io, help: string): Promise<void> {
  const [sub, ...rest] = args;
  const options = { user: { type: 'string' }, name: { type: 'string' } } as const;
  switch (sub) {
    case 'create': {
      const { values } = parseCommandLine(rest, options, 0);
      if (values.help) return io.out(help);
      if (!values.name) throw new CliError("admin-tokens create needs --name, e.g. switchboard admin-tokens create --user ana@example.com --name 'deploy bot'");
      const connection = resolveConnection(environment, values.url);
      const body = { user_id: await userId(connection, values.user, 'admin-tokens create'), name: values.name };
      const token = await adminCall<AdminToken>(connection, 'POST', '/admin-tokens', body);
      io.out(values.json ? JSON.stringify(token, null, 2) : `Created admin token ${token.id} ("${token.name}") for user ${token.user_id}.\n\n  ${token.token}\n`);
      io.err('warning: this is the only time the token is shown. Store it in a secret manager now; it cannot be recovered (revoke it and create another if it is lost).');
      return;
    }
    case 'list': {
      const { values } = parseCommandLine(rest, { user: options.user }, 0);
      if (values.help) return io.out(help);
      const connection = resolveConnection(environment, values.url);
      const query = values.user ? `?user_id=${encodeURIComponent(await userId(connection, values.user, 'admin-tokens list'))}` : '';
      const list = await adminCall<{ data: AdminToken[] }>(connection, 'GET', `/admin-tokens${query}`);
      if (values.json) return io.out(JSON.stringify(list, null, 2));
      if (list.data.length === 0) return io.out('No admin tokens yet.');
      const columns: Column[] = [{ title: 'ID' }, { title: 'USER' }, { title: 'NAME' }, { title: 'TOKEN' }, { title: 'STATUS' }, { title: 'CREATED' }];
      return io.out(table(columns, list.data.map((t) => [t.id, t.user_id, t.name, t.hint, t.status, time(t.created_at)])));
    }
    case 'revoke': {
      const { values, positionals } = parseCommandLine(rest, {}, 1);
      if (values.help) return io.out(help);
      if (!positionals[0]) throw new CliError('admin-tokens revoke needs a token id, e.g. switchboard admin-tokens revoke atk_0123 (see switchboard admin-tokens list)');
      const token = await adminCall<AdminToken>(resolveConnection(environment, values.url), 'DELETE', `/admin-tokens/${encodeURIComponent(positionals[0])}`);
      return io.out(values.json ? JSON.stringify(token, null, 2) : `Revoked admin token ${token.id} ("${token.name}"); it is refused from now on.`);
    }
    default:
      if (sub === undefined || sub === '--help' || sub === '-h') return io.out(help);
      throw new CliError(`unknown command 'admin-tokens ${sub}'. See 'switchboard --help'.`);
  }
}

function describeValue(value: unknown): string {
  return value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
}

/** "rpm: null -> 5; name: -> ci" */
function describeChanges(changes: AuditEntry['changes']): string {
  if (!changes) return '-';
  return Object.entries(changes).map(([field, { from, to }]) => `${field}: ${'from' in { from } && from !== undefined ? `${describeValue(from)} -> ` : '-> '}${describeValue(to)}`).join('; ');
}

export async function auditCommand(args: string[], environment: NodeJS.ProcessEnv, io: Io, help: string): Promise<void> {
  const options = { actor: { type: 'string' }, action: { type: 'string' }, target: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' }, limit: { type: 'string' }, before: { type: 'string' } } as const;
  const { values } = parseCommandLine(args, options, 0);
  if (values.help) return io.out(help);
  const query = new URLSearchParams();
  for (const [option, parameter] of [['actor', 'actor'], ['action', 'action'], ['target', 'target_id'], ['since', 'since'], ['until', 'until'], ['before', 'before']] as const) {
    const value = values[option];
    if (value) query.set(parameter, value);
  }
  const limit = positiveInteger('limit', values.limit, 1000);
  if (limit !== undefined) query.set('limit', String(limit));
  const list = await adminCall<{ data: AuditEntry[]; next_before: string | null }>(resolveConnection(environment, values.url), 'GET', `/audit${query.size ? `?${query}` : ''}`);
  if (values.json) return io.out(JSON.stringify(list, null, 2));
  if (list.data.length === 0) return io.out('No audit entries match.');
  const columns: Column[] = [{ title: 'TIME' }, { title: 'ACTOR' }, { title: 'ACTION' }, { title: 'TARGET' }, { title: 'FROM' }, { title: 'OUTCOME' }, { title: 'CHANGES' }];
  const actor = (entry: AuditEntry) => (entry.actor.kind === 'token' ? `${entry.actor.label} (token ${entry.actor.id})` : entry.actor.label);
  io.out(table(columns, list.data.map((e) => [time(e.at), actor(e), e.action, orDash(e.target_id), e.client, e.outcome, describeChanges(e.changes)])));
  if (list.next_before) io.out(`\nOlder entries: switchboard audit --before ${list.next_before}${limit ? ` --limit ${limit}` : ''}`);
}
