import { adminTokenPath, dataDirectory, findAdminToken } from '../shared/admin-token.js';

// The CLI's view of a running gateway: where it is, the admin token, and requests to the admin
// API. Every failure becomes a CliError whose message is one line for the terminal.

export class CliError extends Error {}

export interface Connection {
  url: string;
  token: string;
  /** Where the token came from, so a refusal can say which setting to fix. */
  tokenSource: string;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** SWITCHBOARD_URL (or --url), and the admin token found by the server's own rules (shared/admin-token.ts). */
export function resolveConnection(environment: NodeJS.ProcessEnv, urlOption?: string): Connection {
  const url = (urlOption ?? environment.SWITCHBOARD_URL ?? DEFAULT_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(url)) throw new CliError(`the gateway address must be an http(s) URL, got '${url}' (SWITCHBOARD_URL or --url)`);
  let found;
  try {
    found = findAdminToken(environment);
  } catch (error) {
    throw new CliError(`${(error as Error).message}; check the file's permissions or set SWITCHBOARD_ADMIN_TOKEN`);
  }
  const path = adminTokenPath(dataDirectory(environment));
  if (!found) throw new CliError(`no admin token: set SWITCHBOARD_ADMIN_TOKEN, or run where the gateway keeps its data (${path} was not found; SWITCHBOARD_DATA_DIR moves it)`);
  if (!found.token) throw new CliError(`no admin token: ${path} is empty; set SWITCHBOARD_ADMIN_TOKEN, or restart the gateway after deleting the file to have one generated`);
  return { url, token: found.token, tokenSource: found.source === 'file' ? path : 'SWITCHBOARD_ADMIN_TOKEN' };
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
    throw new CliError(`${oneLine(error.message)}${advice(code, connection, response)} [${code}, HTTP ${response.status}]`);
  }
  throw new CliError(`${connection.url} answered HTTP ${response.status}${text ? `: ${oneLine(text).slice(0, 200)}` : ''}`);
}

/** What the user can do about the refusals that come from their own set-up rather than their input. */
function advice(code: string, connection: Connection, response: Response): string {
  if (code === 'invalid_admin_token' && connection.token.startsWith('sbat_')) {
    return ` The admin token from ${connection.tokenSource} is unknown to ${connection.url}, revoked, or its user was removed; ask an admin for a new one (switchboard admin-tokens create).`;
  }
  if (code === 'invalid_admin_token') return ` The token from ${connection.tokenSource} is not this gateway's (${connection.url}); set SWITCHBOARD_ADMIN_TOKEN to the gateway's admin token.`;
  if (code === 'too_many_attempts') {
    const seconds = response.headers.get('retry-after');
    return ` Fix the admin token${seconds ? `, then try again in ${seconds} s` : ', then try again later'}.`;
  }
  return '';
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
