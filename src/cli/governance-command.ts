import { adminCall, CliError, resolveConnection } from './admin-client.js';
import { numberOrNone, parseCommandLine, type Options } from './arguments.js';
import { count, table, time, usd, type Column } from './format.js';

// The governance part of the CLI: key options for allow-lists, expiry, project and alerts, the
// `projects` commands, `alerts` (deliveries) and `usage refused`. A thin client of the admin API.

export const governanceHelp = `Key governance (with keys create / keys update)
  --models LIST|none    Comma-separated model ids or globs the key may use (svc/claude-*).
  --expires TIME|none   ISO 8601 time after which the key is refused like a revoked one.
  --project ID|none     The project whose budget and limits the key also counts against.
  --alert PCT=URL       A budget alert: POST a signed webhook to URL when PCT % of the budget
                        is spent (once per budget period). Repeat for more; --alert none clears.

Projects
  projects create --name NAME [--budget USD] [--period P] [--rpm N] [--tpm N] [--alert PCT=URL]
  projects list | show ID | delete ID
  projects update ID [--name NAME] [--budget USD|none] [--period P] [--rpm N|none] [--tpm N|none]
              [--alert PCT=URL|none]

Alerts and refusals
  alerts [--subject KEY_OR_PROJECT_ID]   Alert deliveries, newest first.
  usage refused [--key ID] [--since TIME] [--until TIME]
                        Refused requests (401, 402, 403, 429) per key, model and status.`;

export const keyGovernanceOptions = {
  models: { type: 'string' },
  expires: { type: 'string' },
  project: { type: 'string' },
  alert: { type: 'string', multiple: true },
} as const satisfies Options;

/** "50=https://hooks.example/x" as the admin API's alert objects; ["none"] clears them. */
function alertsOf(raw: string[] | undefined): Array<{ threshold_percent: number; webhook_url: string }> | undefined {
  if (raw === undefined) return undefined;
  if (raw.length === 1 && raw[0]!.trim().toLowerCase() === 'none') return [];
  return raw.map((entry) => {
    const match = /^(\d+)%?=(\S+)$/.exec(entry.trim());
    if (!match) throw new CliError(`invalid value for --alert: '${entry}'; it must look like 80=https://hooks.example/budget`);
    return { threshold_percent: Number(match[1]), webhook_url: match[2]! };
  });
}

const orNull = (raw: string | undefined): string | null | undefined => (raw === undefined ? undefined : raw.trim().toLowerCase() === 'none' ? null : raw.trim());

/** The governance fields of a keys create/update body. */
export function keyGovernanceBody(values: { models?: string; expires?: string; project?: string; alert?: string[] }): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const models = orNull(values.models);
  if (models !== undefined) body.allowed_models = models === null ? null : models.split(',').map((model) => model.trim()).filter(Boolean);
  const expires = orNull(values.expires);
  if (expires !== undefined) body.expires_at = expires;
  const project = orNull(values.project);
  if (project !== undefined) body.project_id = project;
  const alerts = alertsOf(values.alert);
  if (alerts !== undefined) body.alerts = alerts;
  return body;
}

interface Alert {
  threshold_percent: number;
  webhook_url: string;
}

/** Lines for `keys show` and `projects show`. */
export function governanceRows(record: { allowed_models?: string[] | null; expires_at?: string | null; project_id?: string | null; alerts?: Alert[] }): [string, string][] {
  const rows: [string, string][] = [];
  if ('allowed_models' in record) rows.push(['models', record.allowed_models ? record.allowed_models.join(', ') : 'all']);
  if ('expires_at' in record) rows.push(['expires', time(record.expires_at ?? null)]);
  if ('project_id' in record) rows.push(['project', record.project_id ?? '-']);
  rows.push(['alerts', record.alerts && record.alerts.length > 0 ? record.alerts.map((alert) => `${alert.threshold_percent}% -> ${alert.webhook_url}`).join('; ') : 'none']);
  return rows;
}

interface Project {
  id: string;
  name: string;
  budget_usd: number | null;
  budget_period: string;
  spent_usd: number;
  rpm: number | null;
  tpm: number | null;
  alerts: Alert[];
  created_at: string;
}

const projectOptions = {
  name: { type: 'string' }, budget: { type: 'string' }, period: { type: 'string' }, rpm: { type: 'string' }, tpm: { type: 'string' }, alert: { type: 'string', multiple: true },
} as const satisfies Options;

function projectBody(values: { name?: string; budget?: string; period?: string; rpm?: string; tpm?: string; alert?: string[] }, forUpdate: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (values.name !== undefined) body.name = values.name;
  const budget = numberOrNone('budget', values.budget, { integer: false, minimum: 0, unit: 'US dollars' });
  if (budget !== undefined) body.budget_usd = budget;
  if (values.period !== undefined) body.budget_period = values.period;
  const rpm = numberOrNone('rpm', values.rpm, { integer: true, minimum: 1 });
  if (rpm !== undefined) body.rpm = rpm;
  const tpm = numberOrNone('tpm', values.tpm, { integer: true, minimum: 1 });
  if (tpm !== undefined) body.tpm = tpm;
  const alerts = alertsOf(values.alert);
  if (alerts !== undefined) body.alerts = alerts;
  if (forUpdate && Object.keys(body).length === 0) throw new CliError('nothing to update: give at least one of --name, --budget, --period, --rpm, --tpm, --alert');
  return body;
}

function describeProject(project: Project): string {
  const budget = project.budget_usd === null ? 'none' : `${usd(project.budget_usd)}${project.budget_period === 'none' ? ' in total' : ` ${project.budget_period}`}`;
  const rows: [string, string][] = [
    ['id', project.id], ['name', project.name], ['budget', budget], ['spent', `${usd(project.spent_usd)} this period`],
    ['rate limit', project.rpm === null ? 'none' : `${count(project.rpm)} requests/min`], ['token limit', project.tpm === null ? 'none' : `${count(project.tpm)} tokens/min`],
    ...governanceRows({ alerts: project.alerts }), ['created', time(project.created_at)],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${`${label}:`.padEnd(width + 1)} ${value}`).join('\n');
}

interface Io {
  out: (text: string) => void;
}

export async function projectsCommand(args: string[], environment: NodeJS.ProcessEnv, io: Io, help: string): Promise<void> {
  const [sub, ...rest] = args;
  const withId = (values: Record<string, unknown>, positionals: string[]) => {
    if (values.help) return undefined;
    const id = positionals[0];
    if (!id) throw new CliError(`projects ${sub} needs a project id (see switchboard projects list)`);
    return { connection: resolveConnection(environment, values.url as string | undefined), path: `/projects/${encodeURIComponent(id)}` };
  };
  const show = (json: boolean | undefined, value: Project, lead = '') => io.out(json ? JSON.stringify(value, null, 2) : `${lead}${describeProject(value)}`);
  switch (sub) {
    case 'create': {
      const { values } = parseCommandLine(rest, projectOptions, 0);
      if (values.help) return io.out(help);
      if (!values.name) throw new CliError("projects create needs --name, e.g. switchboard projects create --name 'team a' --budget 100 --period monthly");
      const project = await adminCall<Project>(resolveConnection(environment, values.url), 'POST', '/projects', projectBody(values, false));
      return show(values.json, project, `Created project ${project.id}. Add keys with: switchboard keys update KEY_ID --project ${project.id}\n\n`);
    }
    case 'list': {
      const { values } = parseCommandLine(rest, {}, 0);
      if (values.help) return io.out(help);
      const list = await adminCall<{ data: Project[] }>(resolveConnection(environment, values.url), 'GET', '/projects');
      if (values.json) return io.out(JSON.stringify(list, null, 2));
      if (list.data.length === 0) return io.out("No projects yet. Create one with: switchboard projects create --name 'team a'");
      const columns: Column[] = [{ title: 'ID' }, { title: 'NAME' }, { title: 'BUDGET', align: 'right' }, { title: 'PERIOD' }, { title: 'SPENT', align: 'right' }, { title: 'RPM', align: 'right' }, { title: 'TPM', align: 'right' }];
      const limit = (value: number | null) => (value === null ? '-' : count(value));
      return io.out(table(columns, list.data.map((p) => [p.id, p.name, p.budget_usd === null ? '-' : usd(p.budget_usd), p.budget_period, usd(p.spent_usd), limit(p.rpm), limit(p.tpm)])));
    }
    case 'show':
    case 'delete': {
      const { values, positionals } = parseCommandLine(rest, {}, 1);
      const target = withId(values, positionals);
      if (!target) return io.out(help);
      if (sub === 'show') return show(values.json, await adminCall<Project>(target.connection, 'GET', target.path));
      const deleted = await adminCall<{ id: string }>(target.connection, 'DELETE', target.path);
      return io.out(values.json ? JSON.stringify(deleted, null, 2) : `Deleted project ${deleted.id}; its keys no longer count against it.`);
    }
    case 'update': {
      const { values, positionals } = parseCommandLine(rest, projectOptions, 1);
      const target = withId(values, positionals);
      if (!target) return io.out(help);
      return show(values.json, await adminCall<Project>(target.connection, 'PATCH', target.path, projectBody(values, true)), 'Updated; in effect now.\n\n');
    }
    default:
      if (sub === undefined || sub === '--help' || sub === '-h') return io.out(help);
      throw new CliError(`unknown command 'projects ${sub}'. See 'switchboard --help'.`);
  }
}

interface Delivery {
  id: string;
  subject_kind: string;
  subject_id: string;
  threshold_percent: number;
  webhook_url: string;
  status: string;
  attempts: number;
  last_status: number | null;
  created_at: string;
}

export async function alertsCommand(args: string[], environment: NodeJS.ProcessEnv, io: Io, help: string): Promise<void> {
  const { values } = parseCommandLine(args, { subject: { type: 'string' } }, 0);
  if (values.help) return io.out(help);
  const query = values.subject ? `?subject_id=${encodeURIComponent(values.subject)}` : '';
  const list = await adminCall<{ data: Delivery[] }>(resolveConnection(environment, values.url), 'GET', `/alerts${query}`);
  if (values.json) return io.out(JSON.stringify(list, null, 2));
  if (list.data.length === 0) return io.out('No alert deliveries yet.');
  const columns: Column[] = [{ title: 'TIME' }, { title: 'SUBJECT' }, { title: 'THRESHOLD', align: 'right' }, { title: 'STATUS' }, { title: 'ATTEMPTS', align: 'right' }, { title: 'WEBHOOK' }];
  io.out(table(columns, list.data.map((d) => [time(d.created_at), `${d.subject_kind} ${d.subject_id}`, `${d.threshold_percent}%`, `${d.status}${d.last_status ? ` (${d.last_status})` : ''}`, String(d.attempts), d.webhook_url])));
}

interface Refused {
  key_id: string;
  model: string | null;
  status: number;
  count: number;
}

export async function refusedCommand(args: string[], environment: NodeJS.ProcessEnv, io: Io, help: string): Promise<void> {
  const { values } = parseCommandLine(args, { key: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' } }, 0);
  if (values.help) return io.out(help);
  const query = new URLSearchParams();
  if (values.key) query.set('key_id', values.key);
  if (values.since) query.set('since', values.since);
  if (values.until) query.set('until', values.until);
  const list = await adminCall<{ data: Refused[] }>(resolveConnection(environment, values.url), 'GET', `/usage/refused${query.size ? `?${query}` : ''}`);
  if (values.json) return io.out(JSON.stringify(list, null, 2));
  if (list.data.length === 0) return io.out('No refused requests in this range.');
  io.out(table([{ title: 'KEY' }, { title: 'MODEL' }, { title: 'STATUS', align: 'right' }, { title: 'REFUSED', align: 'right' }], list.data.map((row) => [row.key_id, row.model ?? '-', String(row.status), count(row.count)])));
}
