import { openRaw, parseResponses, type RawResponse } from './raw-http.js';

// A seeded generator of hostile HTTP/1.1 requests (malformed paths and percent-encodings, odd
// methods, junk and duplicate headers, bodies that are not JSON or nest absurdly deep, chunked
// framing) and a checker of what the gateway sends back. Same seed, same requests.

export type Random = () => number;

/** mulberry32: tiny, fast and good enough to make fuzz cases reproducible. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function int(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

export interface FuzzCredentials {
  adminToken: string;
  apiKey: string;
}

export interface FuzzCase {
  method: string;
  path: string;
  payload: Buffer;
  /** A description short enough for a failure message. */
  label: string;
  /** Refused by the HTTP parser itself: only the gateway's survival is required. */
  unparsable?: boolean;
}

const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE'];
/** uWS closes the connection on methods it does not know; a few keep that path exercised. */
const unknownMethods = ['FOO', 'M-SEARCH', 'PROPFIND', 'CONNECTX'];

const segments = [
  '%', '%%', '%E0%A4%A', '%ZZ', '%C0%AF', '%FF%FE', '%00', '%u0041', '..%2F..%2Fetc%2Fpasswd', '%2e%2e', 'a%20b', '%F0%9F%98', 'key_123',
  'svc%2Falpha', '', '.', '..', '~', 'x'.repeat(2000),
];

const pathTemplates = [
  '/healthz', '/v1/models', '/v1/models/{p}', '/v1/chat/completions', '/v1/chat/completions/{p}', '/v1/{p}', '/admin/v1/keys', '/admin/v1/keys/{p}',
  '/admin/v1/keys/{p}/rotate', '/admin/v1/usage?{q}', '/admin/v1/requests?{q}', '/dashboard', '/dashboard/', '/dashboard/api/session',
  '/dashboard/api/models', '/dashboard/api/keys', '/dashboard/api/keys/{p}', '/dashboard/api/keys/{p}/rotate', '/dashboard/api/usage?{q}',
  '/dashboard/assets/{p}', '/dashboard/vendor/{p}', '/{p}', '/{p}/{p}', '//admin//v1//keys', '/admin/v1/keys/{p}?{q}',
];

/**
 * Requests the HTTP parser of uWebSockets.js 20.30 refuses before any handler runs. Some of these it
 * neither answers nor closes until its idle time-out (about 10 s; see README), so for these the
 * fuzz only requires that the process survives.
 */
const unparsable = [
  'GET * HTTP/1.1\r\nhost: gateway\r\n\r\n', 'OPTIONS * HTTP/1.1\r\nhost: gateway\r\n\r\n', 'GET http://gateway/v1/models HTTP/1.1\r\nhost: gateway\r\n\r\n',
  'GET v1/models HTTP/1.1\r\nhost: gateway\r\n\r\n', 'GET / HTTP/1.0\r\n\r\n', 'get /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n',
  'GET /a\x01b HTTP/1.1\r\nhost: gateway\r\n\r\n', 'GET / HTTP/1.1\r\nhost : gateway\r\n\r\n', 'GET / HTTP/1.1\r\nhostgateway\r\n\r\n',
  'GET / HTTP/1.1\nhost: gateway\n\n', 'POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
  'POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n',
  'POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-length: abc\r\n\r\n', '\x00\x01\x02 garbage\r\n\r\n', 'GET /\r\n\r\n',
];

const queries = ['limit=%', 'since=%E0%A4%A', 'group_by=nothing', 'limit=-1', 'limit=1e309', 'key_id=&model=&since=', 'a=1&a=2&a=3', '%=%', 'until=2026-13-45', '&&&', 'limit=5'];

function segment(random: Random): string {
  if (random() < 0.15) {
    // Random bytes, percent-encoded (valid or truncated at the end).
    const bytes = Array.from({ length: int(random, 1, 12) }, () => `%${int(random, 0, 255).toString(16).padStart(2, '0').toUpperCase()}`).join('');
    return random() < 0.5 ? bytes : bytes.slice(0, -1);
  }
  return pick(random, segments);
}

function path(random: Random): string {
  return pick(random, pathTemplates).replace(/\{p\}/g, () => segment(random)).replace(/\{q\}/g, () => pick(random, queries));
}

function nested(depth: number, open: string, close: string): string {
  return open.repeat(depth) + close.repeat(depth);
}

function body(random: Random): Buffer | undefined {
  switch (int(random, 0, 11)) {
    case 0:
      return undefined;
    case 1:
      return Buffer.alloc(0);
    case 2:
      return Buffer.from(JSON.stringify({ model: 'svc/alpha', messages: [{ role: 'user', content: 'fuzz' }], max_tokens: int(random, -5, 50) }));
    case 3:
      return Buffer.from(`{"model":"svc/alpha","messages":[{"role":"user","content":"${'a'.repeat(int(random, 0, 200))}`);
    case 4:
      return Buffer.from(nested(int(random, 1, 3000), '[', ']'));
    case 5:
      return Buffer.from(`{"name":${nested(int(random, 10, 2000), '{"a":', '}').replace(/\{"a":\}/, '1')}}`);
    case 6:
      return Buffer.from(Array.from({ length: int(random, 1, 2048) }, () => int(random, 0, 255)));
    case 7:
      return Buffer.from(`{"name":"${'\\u00'.repeat(int(random, 1, 50))}","budget_usd":1e999,"rpm":-0}`);
    case 8:
      return Buffer.from(JSON.stringify({ token: 'x'.repeat(int(random, 0, 500)) }));
    case 9:
      return Buffer.from(`${'['.repeat(100)}"${']'.repeat(300)}"`);
    case 10:
      return Buffer.from('null');
    default:
      return Buffer.from(JSON.stringify({ model: 'svc/alpha', messages: 'not a list', fallbacks: [pick(random, segments)], stream: random() < 0.5 }));
  }
}

function headerLines(random: Random, credentials: FuzzCredentials): string[] {
  const lines = ['host: gateway'];
  const authorization = pick(random, [
    '', `Bearer ${credentials.adminToken}`, `Bearer ${credentials.apiKey}`, 'Bearer', 'Bearer sk-service-', 'Basic Zm9vOmJhcg==', `Bearer ${'k'.repeat(3000)}`,
    'bearer sk-service-aaaa-bbbb', `Bearer ${credentials.apiKey.slice(0, -1)}`,
  ]);
  if (authorization) lines.push(`authorization: ${authorization}`);
  if (random() < 0.6) lines.push(`content-type: ${pick(random, ['application/json', 'text/plain', 'application/json; charset=utf-16', 'multipart/form-data; boundary=x', '', '%%%'])}`);
  if (random() < 0.3) lines.push(`origin: ${pick(random, ['http://gateway', 'https://evil.example', 'null', ''])}`);
  if (random() < 0.3) lines.push(`cookie: ${pick(random, ['sb_session=garbage', 'sb_session=', 'a=b; sb_session=%E0%A4%A', '==;;=='])}`);
  if (random() < 0.2) lines.push(`x-csrf-token: ${pick(random, ['', 'x', '%00'])}`);
  if (random() < 0.2) lines.push(`accept-encoding: ${pick(random, ['gzip', 'br, gzip;q=0', '*'])}`);
  if (random() < 0.2) lines.push(`if-none-match: ${pick(random, ['*', '"x"', ''])}`);
  if (random() < 0.2) lines.push(`x-forwarded-host: ${pick(random, ['', 'evil.example', 'a,b,c'])}`);
  // Fewer than uWS's header limit (see README: a request over it is not answered).
  const junk = int(random, 0, 20);
  for (let index = 0; index < junk; index++) lines.push(`x-fuzz-${index}: ${'v'.repeat(int(random, 0, 200))}`);
  return lines;
}

/** One fuzz request with valid HTTP framing (or deliberately ambiguous framing, answered 400 and closed). */
export function fuzzCase(random: Random, credentials: FuzzCredentials): FuzzCase {
  if (random() < 0.05) {
    const raw = pick(random, unparsable);
    return { method: '', path: '', payload: Buffer.from(raw, 'latin1'), label: JSON.stringify(raw.slice(0, 60)), unparsable: true };
  }
  const method = random() < 0.05 ? pick(random, unknownMethods) : pick(random, methods);
  const target = path(random);
  const lines = headerLines(random, credentials);
  const content = method === 'HEAD' ? undefined : body(random);
  const framing = int(random, 0, 9);
  let payloadBody: Buffer = Buffer.alloc(0);
  let label = `${method} ${target.slice(0, 80)}`;
  if (content !== undefined) {
    if (framing === 0) {
      lines.push('transfer-encoding: chunked');
      const size = content.length.toString(16);
      payloadBody = Buffer.concat([Buffer.from(content.length > 0 ? `${size}\r\n` : ''), content, Buffer.from(content.length > 0 ? '\r\n0\r\n\r\n' : '0\r\n\r\n')]);
      label += ' (chunked)';
    } else if (framing === 1) {
      lines.push(`content-length: ${content.length}`, `content-length: ${content.length + 7}`);
      payloadBody = content;
      label += ' (two content-lengths)';
    } else {
      lines.push(`content-length: ${content.length}`);
      payloadBody = content;
    }
    label += ` body ${content.length} bytes`;
  }
  const head = Buffer.from(`${method} ${target} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return { method, path: target, payload: Buffer.concat([head, payloadBody]), label };
}

export interface FuzzOutcome {
  responses: RawResponse[];
  closed: boolean;
}

/** Sends one case on its own connection; collects answers until the server closes or goes quiet. */
export async function sendCase(url: string, fuzz: FuzzCase, quietMs = 30, capMs = fuzz.unparsable ? 300 : 3000): Promise<FuzzOutcome> {
  const connection = await openRaw(url);
  try {
    await connection.write(fuzz.payload);
    const bodiless = () => fuzz.method === 'HEAD';
    await connection
      .waitFor((data) => parseResponses(data, bodiless).responses.length > 0, capMs)
      .catch(() => undefined);
    // Anything after the first answer (a second answer, the close) arrives promptly or not at all.
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const parsed = parseResponses(connection.received(), bodiless);
    if (parsed.leftover.length > 0) throw new Error(`${fuzz.label}: bytes that are not an HTTP response: ${parsed.leftover.toString('latin1').slice(0, 200)}`);
    return { responses: parsed.responses, closed: connection.isClosed() };
  } finally {
    connection.destroy();
  }
}

/** Problems with an outcome: an answer that is not well-formed, or neither an answer nor a close. */
export function problems(fuzz: FuzzCase, outcome: FuzzOutcome): string[] {
  const found: string[] = [];
  if (outcome.responses.length === 0 && !outcome.closed && !fuzz.unparsable) found.push(`${fuzz.label}: no answer and the connection left open`);
  for (const response of outcome.responses) {
    if (response.status < 200 || response.status > 599) found.push(`${fuzz.label}: status ${response.status}`);
    if (response.status < 400 || fuzz.method === 'HEAD') continue;
    const contentType = response.headers.find(([name]) => name === 'content-type')?.[1];
    if (contentType !== 'application/json') {
      found.push(`${fuzz.label}: ${response.status} with content-type ${contentType}`);
      continue;
    }
    try {
      const parsed = JSON.parse(response.body.toString('utf8')) as { error?: { code?: unknown; message?: unknown } };
      if (typeof parsed.error?.code !== 'string' || typeof parsed.error.message !== 'string') found.push(`${fuzz.label}: ${response.status} without an error object`);
    } catch {
      found.push(`${fuzz.label}: ${response.status} with a body that is not JSON`);
    }
  }
  return found;
}

/** Runs cases from `seed` with `concurrency` connections until `durationMs` or `maxCases` is reached. */
export async function runFuzz(url: string, credentials: FuzzCredentials, options: { seed: number; durationMs: number; maxCases: number; concurrency: number }): Promise<{ cases: number; problems: string[]; answered: number; closedWithoutAnswer: number }> {
  const random = seededRandom(options.seed);
  const deadline = Date.now() + options.durationMs;
  const found: string[] = [];
  let cases = 0;
  let answered = 0;
  let closedWithoutAnswer = 0;
  const lane = async () => {
    while (Date.now() < deadline && cases < options.maxCases) {
      cases++;
      const fuzz = fuzzCase(random, credentials);
      try {
        const outcome = await sendCase(url, fuzz);
        if (outcome.responses.length > 0) answered++;
        else closedWithoutAnswer++;
        found.push(...problems(fuzz, outcome));
      } catch (error) {
        found.push((error as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, lane));
  return { cases, problems: found, answered, closedWithoutAnswer };
}
