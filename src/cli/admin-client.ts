import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The CLI's view of a running gateway: where it is, the admin token, and requests to the admin
// API. Every failure becomes a CliError whose message is one line for the terminal.

export class CliError extends Error {}

export interface Connection {
  url: string;
  token: string;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** SWITCHBOARD_URL (or --url), and the token from SWITCHBOARD_ADMIN_TOKEN or the data folder's admin-token file. */
export function resolveConnection(environment: NodeJS.ProcessEnv, urlOption?: string): Connection {
  const url = (urlOption ?? environment.SWITCHBOARD_URL ?? DEFAULT_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(url)) throw new CliError(`the gateway address must be an http(s) URL, got '${url}' (SWITCHBOARD_URL or --url)`);
  const fromEnvironment = environment.SWITCHBOARD_ADMIN_TOKEN?.trim();
  if (fromEnvironment) return { url, token: fromEnvironment };
  const path = join(resolve(environment.SWITCHBOARD_DATA_DIR || './data'), 'admin-token');
  let token = '';
  try {
    token = readFileSync(path, 'utf8').trim();
  } catch {
    throw new CliError(`no admin token: set SWITCHBOARD_ADMIN_TOKEN, or run where the gateway keeps its data (${path} was not found; SWITCHBOARD_DATA_DIR moves it)`);
  }
  if (!token) throw new CliError(`no admin token: ${path} is empty`);
  return { url, token };
}

interface ApiErrorBody {
  error?: { message?: unknown; type?: unknown; code?: unknown; param?: unknown };
}

/** One request to the admin API; resolves to the JSON body of a 2xx answer. */
export async function adminCall<T>(connection: Connection, method: string, path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${connection.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${connection.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const reason = error instanceof Error && error.name === 'TimeoutError' ? 'no answer within 30 s' : cause?.code ?? cause?.message ?? (error as Error).message;
    throw new CliError(`cannot reach Switchboard at ${connection.url} (${reason}); is it running? SWITCHBOARD_URL sets its address`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (response.ok) {
    if (parsed === undefined) throw new CliError(`${connection.url} answered ${response.status} without a JSON body; is it a Switchboard gateway?`);
    return parsed as T;
  }
  const error = (parsed as ApiErrorBody | undefined)?.error;
  if (error && typeof error.message === 'string') {
    const code = typeof error.code === 'string' ? error.code : typeof error.type === 'string' ? error.type : 'error';
    throw new CliError(`${oneLine(error.message)} [${code}, HTTP ${response.status}]`);
  }
  throw new CliError(`${connection.url} answered HTTP ${response.status}${text ? `: ${oneLine(text).slice(0, 200)}` : ''}`);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
