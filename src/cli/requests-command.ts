import { adminCall, resolveConnection } from './admin-client.js';
import { parseCommandLine, positiveInteger, type Options } from './arguments.js';
import { count, orDash, table, time, usd, type Column } from './format.js';

// `switchboard requests`: the newest ledger records (GET /admin/v1/requests), one line each, with
// the fallback attempts that failed before the answer.

interface RequestAttempt {
  model: string;
  outcome: string;
  status: number | null;
}

interface RequestRecord {
  id: string;
  key_id: string;
  requested_model: string;
  served_model: string | null;
  status: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
  estimated: boolean;
  latency_ms: number;
  created_at: string;
  attempts: RequestAttempt[];
}

export const requestsHelp = `Requests
  requests [--key ID] [--model MODEL] [--since TIME] [--until TIME] [--limit N]
                        The newest requests (default 20, at most 1000), with status,
                        tokens (≈: counted by the gateway), cost, latency and failed
                        fallback attempts.`;

const requestOptions = {
  key: { type: 'string' },
  model: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
} as const satisfies Options;

function failedAttempts(record: RequestRecord): string {
  const failed = record.attempts.filter((attempt) => attempt.outcome !== 'success');
  return failed.length === 0 ? '-' : failed.map((attempt) => `${attempt.model}: ${attempt.outcome.replace(/_/g, ' ')}`).join(', ');
}

export async function requestsCommand(args: string[], environment: NodeJS.ProcessEnv, io: { out: (text: string) => void }, help: string): Promise<void> {
  const { values } = parseCommandLine(args, requestOptions, 0);
  if (values.help) return io.out(help);
  const limit = positiveInteger('limit', values.limit, 1000) ?? 20;
  const query = new URLSearchParams({ limit: String(limit) });
  if (values.key) query.set('key_id', values.key);
  if (values.model) query.set('model', values.model);
  if (values.since) query.set('since', values.since);
  if (values.until) query.set('until', values.until);
  const result = await adminCall<{ data: RequestRecord[] }>(resolveConnection(environment, values.url), 'GET', `/requests?${query}`);
  if (values.json) return io.out(JSON.stringify(result, null, 2));
  if (result.data.length === 0) return io.out('No requests recorded with these filters.');
  const columns: Column[] = [
    { title: 'TIME' }, { title: 'KEY' }, { title: 'REQUESTED' }, { title: 'SERVED' }, { title: 'STATUS', align: 'right' },
    { title: 'TOKENS (IN + OUT)', align: 'right' }, { title: 'COST (USD)', align: 'right' }, { title: 'LATENCY', align: 'right' }, { title: 'FAILED ATTEMPTS' },
  ];
  io.out(table(columns, result.data.map((record) => [
    time(record.created_at), record.key_id, record.requested_model, orDash(record.served_model), String(record.status),
    `${record.estimated ? '≈ ' : ''}${count(record.prompt_tokens)} + ${count(record.completion_tokens)}`,
    usd(record.cost_usd), `${count(Math.round(record.latency_ms))} ms`, failedAttempts(record),
  ])));
}
