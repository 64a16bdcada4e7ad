import { describe, expect, it } from 'vitest';
import { useGateway, type GatewayContext } from './http/gateway-context.js';
import { adminRequest, chat, hello } from './support/api-client.js';
import { scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment, type ScaledDeployment } from './support/scaled-harness.js';
import { exchange, firstAnswer, header, openRaw, parseResponses, type RawResponse } from './support/raw-http.js';

// The ingress's defences over raw HTTP: malformed paths, nesting bombs, uploads without a key, more
// body bytes than the process will hold, and ambiguous framing (duplicate Content-Length).

const MiB = 1024 * 1024;

function errorCode(response: RawResponse): string {
  return (JSON.parse(response.body.toString('utf8')) as { error: { code: string } }).error.code;
}

function firstResponse(data: Buffer): RawResponse {
  const [response] = parseResponses(data).responses;
  if (!response) throw new Error(`no complete response in: ${data.toString('latin1').slice(0, 300)}`);
  return response;
}

async function expectHealthy(context: GatewayContext): Promise<void> {
  const health = await fetch(`${context.deployment.url()}/healthz`);
  expect(health.status).toBe(200);
  const completion = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello });
  expect(completion.status).toBe(200);
}

function nested(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

/** Request head of an upload of `length` bytes; the body follows separately. */
function uploadHead(path: string, length: number, authorization?: string): string {
  return `POST ${path} HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${authorization ? `authorization: ${authorization}\r\n` : ''}\r\n`;
}

/** An upload that declares `length` bytes and sends the first `sent`: resolves with what came back and how much had been sent by then. */
async function partialUpload(url: string, path: string, length: number, sent: number, authorization?: string) {
  const connection = await openRaw(url);
  await connection.write(uploadHead(path, length, authorization));
  await connection.write(Buffer.alloc(sent, 0x20));
  return connection;
}

function describeHardening(context: GatewayContext): void {
  const admin = () => `Bearer ${context.deployment.adminToken}`;

  it('answers malformed percent-encodings in route parameters with 400 JSON, for every method, and keeps serving', async () => {
    const paths = ['/admin/v1/keys/%E0%A4%A', '/admin/v1/keys/%', '/admin/v1/keys/%ZZ/rotate', '/admin/v1/keys/%C0', '/dashboard/api/keys/%', '/dashboard/api/keys/%E0%A4%A', '/dashboard/api/keys/%FF/rotate'];
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
        const response = await firstAnswer(context.deployment.url(), `${method} ${path} HTTP/1.1\r\nhost: gateway\r\nauthorization: ${admin()}\r\ncontent-length: 2\r\n\r\n{}`);
        // A method the path does not serve is a 404; any method it serves must decode the path safely.
        expect([400, 404], `${method} ${path}`).toContain(response.status);
        expect(header(response, 'content-type')).toBe('application/json');
        if (response.status === 400) expect(errorCode(response)).toBe('invalid_value');
      }
    }
    await expectHealthy(context);
  });

  it('still decodes well-formed percent-encodings in route parameters', async () => {
    const created = await adminRequest(context.deployment, 'POST', '/admin/v1/keys', { name: 'encoded' });
    const id = created.body.id as string;
    const encoded = [...id].map((character) => `%${character.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    const response = await firstAnswer(context.deployment.url(), `GET /admin/v1/keys/${encoded} HTTP/1.1\r\nhost: gateway\r\nauthorization: ${admin()}\r\n\r\n`);
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body.toString()).id).toBe(id);
  });

  it('refuses JSON nested deeper than 64 levels with 400 invalid_json naming the limit, on the API and the admin API', async () => {
    const deep = await chat(context.deployment, context.key.key, `{"model":"svc/alpha","messages":[{"role":"user","content":"hi"}],"metadata":{"a":${nested(63)}}}`);
    expect(deep.status).toBe(400);
    const body = (await deep.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_json');
    expect(body.error.message).toContain('64');

    // At the limit the depth is fine (the schema may still refuse the content).
    const atLimit = await chat(context.deployment, context.key.key, `{"model":"svc/alpha","messages":[{"role":"user","content":"hi"}],"metadata":{"a":${nested(62)}}}`);
    expect(((await atLimit.json()) as { error?: { code: string } }).error?.code).not.toBe('invalid_json');

    // Brackets inside strings are text, not nesting.
    const inString = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: [{ role: 'user', content: `${'[{'.repeat(500)}"\\"` }] });
    expect(inString.status).toBe(200);

    const bomb = await chat(context.deployment, context.key.key, nested(500_000));
    expect(bomb.status).toBe(400);
    expect(((await bomb.json()) as { error: { code: string } }).error.code).toBe('invalid_json');

    const adminBomb = await fetch(`${context.deployment.url()}/admin/v1/keys`, { method: 'POST', headers: { authorization: admin(), 'content-type': 'application/json' }, body: `{"name":${nested(100_000)}}` });
    expect(adminBomb.status).toBe(400);
    expect(((await adminBomb.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    await expectHealthy(context);
  });

  it('answers an unauthenticated upload with 401 while it is still arriving, and closes the connection', async () => {
    for (const path of ['/v1/chat/completions', '/admin/v1/keys']) {
      const connection = await partialUpload(context.deployment.url(), path, 4 * MiB, 64 * 1024, 'Bearer sk-service-nobody-nothing');
      // 64 KiB of 4 MiB sent: the answer comes now, not after the rest.
      const response = firstResponse(await connection.waitFor((data) => parseResponses(data).responses.length > 0, 5000));
      expect(response.status, path).toBe(401);
      expect(header(response, 'connection')).toBe('close');
      // A client that keeps sending is cut off rather than read to the end.
      for (let sent = 0; sent < 4 * MiB && !connection.isClosed(); sent += 256 * 1024) await connection.write(Buffer.alloc(256 * 1024, 0x20));
      await connection.closed;
      connection.destroy();
    }
  });

  it('answers 100 concurrent unauthenticated 4 MiB uploads with 401 each before their bodies arrive, and keeps serving', async () => {
    const connections = await Promise.all(Array.from({ length: 100 }, (_, index) => partialUpload(context.deployment.url(), '/v1/chat/completions', 4 * MiB, 32 * 1024, index % 2 ? undefined : `Bearer ${context.key.key.slice(0, -4)}xxxx`)));
    try {
      const answers = await Promise.all(connections.map((connection) => connection.waitFor((data) => parseResponses(data).responses.length > 0, 10_000)));
      for (const data of answers) {
        const response = firstResponse(data);
        expect(response.status).toBe(401);
        expect(errorCode(response)).toBe('invalid_api_key');
      }
    } finally {
      for (const connection of connections) connection.destroy();
    }
    await expectHealthy(context);
  });

  it('refuses two Content-Length headers with 400 and a closed connection, and never runs the request smuggled behind them', async () => {
    const smuggled = JSON.stringify({ name: 'smuggled' });
    const inner = `POST /admin/v1/keys HTTP/1.1\r\nhost: gateway\r\nauthorization: ${admin()}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(smuggled)}\r\n\r\n${smuggled}`;
    const outer = `POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer ${context.key.key}\r\ncontent-type: application/json\r\ncontent-length: 2\r\ncontent-length: ${2 + Buffer.byteLength(inner)}\r\n\r\n{}`;
    const { data, closed } = await exchange(context.deployment.url(), outer + inner, 300, 5000);
    const { responses, leftover } = parseResponses(data);
    expect(leftover.length).toBe(0);
    expect(responses.length).toBeGreaterThan(0);
    for (const response of responses) {
      expect(response.status).toBe(400);
      expect(errorCode(response)).toBe('invalid_request_framing');
    }
    expect(closed).toBe(true);
    const keys = await adminRequest(context.deployment, 'GET', '/admin/v1/keys');
    expect((keys.body.data as Array<{ name: string }>).map((key) => key.name)).not.toContain('smuggled');
    await expectHealthy(context);
  });

  it('refuses a declared body over the size limit at once with 413 and closes the connection', async () => {
    const connection = await partialUpload(context.deployment.url(), '/v1/chat/completions', 5 * MiB, 1024, `Bearer ${context.key.key}`);
    const response = firstResponse(await connection.waitFor((data) => parseResponses(data).responses.length > 0, 5000));
    expect(response.status).toBe(413);
    expect(errorCode(response)).toBe('request_too_large');
    await connection.closed;
  });
}

describe('ingress hardening (embedded)', () => {
  describeHardening(useGateway('embedded'));
});

describe.skipIf(!scaledOutAvailable)('ingress hardening (a scaled-out ingress process)', () => {
  let scaled: ScaledDeployment | undefined;
  describeHardening(
    useGateway(async (openAiUrl) => {
      scaled = await startScaledDeployment({ openAiUrl, ingressCount: 1, workerCount: 1 });
      return scaled;
    }),
  );
  it('is still the same ingress process', () => {
    expect(scaled!.ingresses[0]!.child.exitCode).toBe(null);
    expect(scaled!.ingresses[0]!.child.signalCode).toBe(null);
  });
});

if (!scaledOutAvailable) process.stderr.write(`ingress hardening (scaled out): ${scaledOutSkipNotice}\n`);

describe('in-flight body bytes bound (SWITCHBOARD_MAX_INFLIGHT_BODY_BYTES)', () => {
  const context = useGateway('embedded', { SWITCHBOARD_MAX_INFLIGHT_BODY_BYTES: String(MiB) });

  it('refuses an upload that would cross the bound with 503 overloaded while it is still arriving, and accepts uploads again once bodies are released', async () => {
    const authorization = `Bearer ${context.key.key}`;
    const url = context.deployment.url();
    const uploads = [];
    for (let index = 0; index < 3; index++) {
      uploads.push(await partialUpload(url, '/v1/chat/completions', 3 * MiB, 450 * 1024, authorization));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Three uploads of 450 KiB each cannot all be held under 1 MiB: one is refused while it is still arriving.
    const answered = await Promise.any(uploads.map(async (upload) => ({ upload, data: await upload.waitFor((data) => parseResponses(data).responses.length > 0, 5000) })));
    const response = firstResponse(answered.data);
    expect(response.status).toBe(503);
    expect(errorCode(response)).toBe('overloaded');
    expect(header(response, 'retry-after')).toBe('1');
    await answered.upload.closed;
    const holders = uploads.filter((upload) => upload !== answered.upload);
    for (const holder of holders) expect(holder.received().length).toBe(0);

    // Clients that go away give their bytes back.
    for (const holder of holders) holder.destroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const body = JSON.stringify({ model: 'svc/alpha', messages: [{ role: 'user', content: 'x'.repeat(900 * 1024) }] });
    const large = await chat(context.deployment, context.key.key, body);
    expect(large.status).toBe(200);
  });
});
