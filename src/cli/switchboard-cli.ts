import { adminCall, CliError, DEFAULT_URL, resolveConnection, type Connection } from './admin-client.js';
import { numberOrNone, parseCommandLine, type Options } from './arguments.js';
import { count, orDash, table, time, usd, type Column } from './format.js';
import type { UsageRow } from '../shared/store/store.js';
import { alertsCommand, governanceHelp, governanceRows, keyGovernanceBody, keyGovernanceOptions, projectsCommand, refusedCommand } from './governance-command.js';
import { accessHelp, adminTokensCommand, auditCommand, usersCommand } from './access-command.js';
import { migrateCommand, migrateHelp } from './migrate-command.js';
import { requestsCommand, requestsHelp } from './requests-command.js';

// `switchboard`: manage keys and read usage of a running gateway through its admin API.
// A thin HTTP client: every rule (validation, limits) lives in the server, whose errors are
// printed as one line. Exit code 0 on success, 1 on any error.

const HELP = `Usage: switchboard <command> [options]

Keys
  keys create --name NAME [--budget USD] [--period none|daily|weekly|monthly]
              [--rpm N] [--tpm N] [--max-concurrent N]
                        Create a key. The full key is printed once; store it then.
  keys list             List every key.
  keys show ID          Show one key, with its spend.
  keys update ID [--name NAME] [--budget USD|none] [--period P] [--rpm N|none]
              [--tpm N|none] [--max-concurrent N|none]
                        Change a key's name, budget or limits (in effect at once).
  keys revoke ID        Revoke a key (refused at once, everywhere).

Usage
  usage [--key ID] [--model MODEL] [--since TIME] [--until TIME]
        [--group-by key|model|day]
                        Requests, tokens and cost; TIME is ISO 8601 (since inclusive,
                        until exclusive), e.g. 2026-11-01 or 2026-11-01T12:00:00Z.

${requestsHelp}

${governanceHelp}

${accessHelp}

${migrateHelp}

Options
  --json                Print the admin API's JSON instead of a table.
  --url URL             The gateway (default: SWITCHBOARD_URL, else ${DEFAULT_URL}).
  -h, --help            This help.

The admin token is found as the gateway finds it: SWITCHBOARD_ADMIN_TOKEN, else the admin-token
file in the data folder (SWITCHBOARD_DATA_DIR, default ./data). Run the CLI with the gateway's
environment or in its working folder, or set SWITCHBOARD_ADMIN_TOKEN to a per-user admin token
(sbat_...) to act with that user's role.`;

interface Output {
  out: (text: string) => void;
  err: (text: string) => void;
}

const keyFields = {
  name: { type: 'string' },
  budget: { type: 'string' },
  period: { type: 'string' },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  'max-concurrent': { type: 'string' },
  ...keyGovernanceOptions,
} as const satisfies Options;

interface ApiKey {
  id: string;
  name: string;
  key_hint: string;
  budget_usd: number | null;
  budget_period: string;
  spent_usd: number;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
  status: string;
  allowed_models?: string[] | null;
  expires_at?: string | null;
  project_id?: string | null;
  alerts?: Array<{ threshold_percent: number; webhook_url: string }>;
  key?: string;
}

function parse<O extends Options>(args: string[], options: O, positionals: number) {
  return parseCommandLine(args, options, positionals);
}

const budgetRule = { integer: false, minimum: 0, unit: 'US dollars' };
const limitRule = { integer: true, minimum: 1 };

function keyBody(values: Record<string, unknown>, forUpdate: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (values.name !== undefined) body.name = values.name;
  const budget = numberOrNone('budget', values.budget as string | undefined, budgetRule);
  const rpm = numberOrNone('rpm', values.rpm as string | undefined, limitRule);
  const tpm = numberOrNone('tpm', values.tpm as string | undefined, limitRule);
  const concurrent = numberOrNone('max-concurrent', values['max-concurrent'] as string | undefined, limitRule);
  if (budget !== undefined) body.budget_usd = budget;
  if (values.period !== undefined) body.budget_period = values.period;
  if (rpm !== undefined) body.rpm = rpm;
  if (tpm !== undefined) body.tpm = tpm;
  if (concurrent !== undefined) body.max_concurrent = concurrent;
  Object.assign(body, keyGovernanceBody(values as Parameters<typeof keyGovernanceBody>[0]));
  if (forUpdate && Object.keys(body).length === 0) throw new CliError('nothing to update: give at least one of --name, --budget, --period, --rpm, --tpm, --max-concurrent, --models, --expires, --project, --alert');
  return body;
}

function budgetText(key: ApiKey): string {
  if (key.budget_usd === null) return 'none';
  return `${usd(key.budget_usd)}${key.budget_period === 'none' ? ' in total' : ` ${key.budget_period}`}`;
}

function describeKey(key: ApiKey): string {
  const limit = (value: number | null, unit: string) => (value === null ? 'none' : `${count(value)} ${unit}`);
  const rows: [string, string][] = [
    ['id', key.id],
    ['name', key.name],
    ['status', key.status],
    ['key', `${key.key_hint} (hint; the full key is only shown when created)`],
    ['budget', budgetText(key)],
    ['spent', `${usd(key.spent_usd)} in total`],
    ['rate limit', limit(key.rpm, 'requests/min')],
    ['token limit', limit(key.tpm, 'tokens/min')],
    ['concurrency', limit(key.max_concurrent, 'at once')],
    ['created', time(key.created_at)],
    ['last used', time(key.last_used_at)],
    ['revoked', time(key.revoked_at)],
    ...governanceRows(key),
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${`${label}:`.padEnd(width + 1)} ${value}`).join('\n');
}

async function keysCommand(args: string[], environment: NodeJS.ProcessEnv, io: Output): Promise<void> {
  const [sub, ...rest] = args;
  const connect = (url: string | undefined): Connection => resolveConnection(environment, url);
  const print = (json: boolean | undefined, value: unknown, text: () => string) => io.out(json ? JSON.stringify(value, null, 2) : text());
  switch (sub) {
    case 'create': {
      const { values } = parse(rest, keyFields, 0);
      if (values.help) return io.out(HELP);
      if (!values.name) throw new CliError("keys create needs --name, e.g. switchboard keys create --name 'my app'");
      const created = await adminCall<ApiKey>(connect(values.url), 'POST', '/keys', keyBody(values, false));
      print(values.json, created, () => `Created key ${created.id} ("${created.name}").\n\n  ${created.key}\n\n${describeKey(created)}`);
      io.err('warning: this is the only time the full key is shown. Store it in a secret manager now; it cannot be recovered (revoke it and create another if it is lost).');
      return;
    }
    case 'list': {
      const { values } = parse(rest, {}, 0);
      if (values.help) return io.out(HELP);
      const list = await adminCall<{ data: ApiKey[] }>(connect(values.url), 'GET', '/keys');
      if (values.json) return io.out(JSON.stringify(list, null, 2));
      if (list.data.length === 0) return io.out("No keys yet. Create one with: switchboard keys create --name 'my app'");
      const columns: Column[] = [
        { title: 'ID' }, { title: 'NAME' }, { title: 'STATUS' }, { title: 'KEY' }, { title: 'BUDGET', align: 'right' }, { title: 'SPENT', align: 'right' },
        { title: 'RPM', align: 'right' }, { title: 'TPM', align: 'right' }, { title: 'CONCURRENT', align: 'right' }, { title: 'LAST USED' },
      ];
      const limit = (value: number | null) => (value === null ? '-' : count(value));
      io.out(table(columns, list.data.map((key) => [
        key.id, key.name, key.status, key.key_hint, key.budget_usd === null ? '-' : budgetText(key), usd(key.spent_usd),
        limit(key.rpm), limit(key.tpm), limit(key.max_concurrent), time(key.last_used_at),
      ])));
      return;
    }
    case 'show':
    case 'revoke': {
      const { values, positionals } = parse(rest, {}, 1);
      if (values.help) return io.out(HELP);
      const id = positionals[0];
      if (!id) throw new CliError(`keys ${sub} needs a key id, e.g. switchboard keys ${sub} key_0123 (see switchboard keys list)`);
      const key = await adminCall<ApiKey>(connect(values.url), sub === 'show' ? 'GET' : 'DELETE', `/keys/${encodeURIComponent(id)}`);
      print(values.json, key, () => (sub === 'show' ? describeKey(key) : `Revoked key ${key.id} ("${key.name}"). Requests with it are refused from now on.`));
      return;
    }
    case 'update': {
      const { values, positionals } = parse(rest, keyFields, 1);
      if (values.help) return io.out(HELP);
      const id = positionals[0];
      if (!id) throw new CliError('keys update needs a key id, e.g. switchboard keys update key_0123 --budget 50');
      const key = await adminCall<ApiKey>(connect(values.url), 'PATCH', `/keys/${encodeURIComponent(id)}`, keyBody(values, true));
      print(values.json, key, () => `Updated key ${key.id}; in effect now.\n\n${describeKey(key)}`);
      return;
    }
    case undefined:
    case '--help':
    case '-h':
      io.out(HELP);
      return;
    default:
      throw new CliError(`unknown command 'keys ${sub}'. See 'switchboard --help'.`);
  }
}

async function usageCommand(args: string[], environment: NodeJS.ProcessEnv, io: Output): Promise<void> {
  const { values } = parse(args, { key: { type: 'string' }, model: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' }, 'group-by': { type: 'string' } }, 0);
  if (values.help) return io.out(HELP);
  const groupBy = values['group-by'];
  if (groupBy !== undefined && !['key', 'model', 'day'].includes(groupBy)) throw new CliError(`--group-by must be key, model or day, got '${groupBy}'`);
  const query = new URLSearchParams();
  if (values.key) query.set('key_id', values.key);
  if (values.model) query.set('model', values.model);
  if (values.since) query.set('since', values.since);
  if (values.until) query.set('until', values.until);
  if (groupBy) query.set('group_by', groupBy);
  const connection = resolveConnection(environment, values.url);
  const result = await adminCall<{ data: UsageRow[] }>(connection, 'GET', `/usage${query.size ? `?${query}` : ''}`);
  if (values.json) return io.out(JSON.stringify(result, null, 2));

  const range = `${values.since ? `from ${values.since}` : 'from the start'} ${values.until ? `until ${values.until}` : 'until now'}`;
  const scope = [values.key && `key ${values.key}`, values.model && `model ${values.model}`].filter(Boolean).join(', ');
  io.out(`Usage ${range}${scope ? ` (${scope})` : ''}:\n`);
  const rows = result.data;
  if (groupBy && rows.length === 0) return io.out('No requests in this range.');
  const first: Column[] = [];
  const cells: ((row: UsageRow) => string)[] = [];
  if (groupBy === 'key') {
    // Names make the table readable; the list is one more call, skipped if it fails.
    const names = new Map<string, string>();
    try {
      for (const key of (await adminCall<{ data: ApiKey[] }>(connection, 'GET', '/keys')).data) names.set(key.id, key.name);
    } catch {
      // ids alone will do
    }
    first.push({ title: 'KEY' }, { title: 'NAME' });
    cells.push((row) => orDash(row.key_id), (row) => orDash(row.key_id && names.get(row.key_id)));
  } else if (groupBy === 'model') {
    first.push({ title: 'MODEL' });
    cells.push((row) => row.model ?? '(none served)');
  } else if (groupBy === 'day') {
    first.push({ title: 'DAY (UTC)' });
    cells.push((row) => orDash(row.day));
  }
  const columns: Column[] = [...first, { title: 'REQUESTS', align: 'right' }, { title: 'PROMPT TOKENS', align: 'right' }, { title: 'COMPLETION TOKENS', align: 'right' }, { title: 'COST (USD)', align: 'right' }];
  const totals = (row: UsageRow) => [count(row.requests), count(row.prompt_tokens), count(row.completion_tokens), usd(row.cost_usd)];
  const body = rows.map((row) => [...cells.map((cell) => cell(row)), ...totals(row)]);
  if (groupBy && rows.length > 1) {
    // The total is summed in nano-USD so it is exact, like each row.
    const sum: UsageRow = {
      requests: rows.reduce((total, row) => total + row.requests, 0),
      prompt_tokens: rows.reduce((total, row) => total + row.prompt_tokens, 0),
      completion_tokens: rows.reduce((total, row) => total + row.completion_tokens, 0),
      cost_usd: rows.reduce((total, row) => total + Math.round(row.cost_usd * 1e9), 0) / 1e9,
      cache_read_tokens: rows.reduce((total, row) => total + row.cache_read_tokens, 0),
      cache_write_tokens: rows.reduce((total, row) => total + row.cache_write_tokens, 0),
      cache_write_1h_tokens: rows.reduce((total, row) => total + row.cache_write_1h_tokens, 0),
      reasoning_tokens: rows.reduce((total, row) => total + row.reasoning_tokens, 0),
    };
    body.push([...first.map((_, i) => (i === 0 ? 'TOTAL' : '')), ...totals(sum)]);
  }
  io.out(table(columns, body));
}

/** Runs one command line; returns the exit code. */
export async function main(argv: string[], environment: NodeJS.ProcessEnv = process.env, io: Output = defaultOutput): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'keys':
        await keysCommand(rest, environment, io);
        break;
      case 'usage':
        if (rest[0] === 'refused') await refusedCommand(rest.slice(1), environment, io, HELP);
        else await usageCommand(rest, environment, io);
        break;
      case 'projects':
        await projectsCommand(rest, environment, io, HELP);
        break;
      case 'alerts':
        await alertsCommand(rest, environment, io, HELP);
        break;
      case 'migrate':
        await migrateCommand(rest, environment, io, HELP);
        break;
      case 'requests':
        await requestsCommand(rest, environment, io, HELP);
        break;
      case 'users':
        await usersCommand(rest, environment, io, HELP);
        break;
      case 'admin-tokens':
        await adminTokensCommand(rest, environment, io, HELP);
        break;
      case 'audit':
        await auditCommand(rest, environment, io, HELP);
        break;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.out(HELP);
        break;
      default:
        throw new CliError(`unknown command '${command}'. See 'switchboard --help'.`);
    }
    return 0;
  } catch (error) {
    if (error instanceof CliError) io.err(`error: ${error.message}`);
    else io.err(`error: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}

const defaultOutput: Output = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};
