import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { chat, createKey, eventually, hello, type CreatedKey } from './support/api-client.js';
import { startEmbeddedDeployment, type TestDeployment } from './support/gateway-harness.js';

// Load shedding and back-pressure, with limits small enough to reach in a test.

describe('load shedding and slow readers', () => {
  let double: OpenAiProviderDouble;
  let deployment: TestDeployment;
  let key: CreatedKey;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    deployment = await startEmbeddedDeployment({
      openAiUrl: double.url,
      environment: { SWITCHBOARD_WORKER_CONCURRENCY: '1', SWITCHBOARD_MAX_QUEUED_JOBS: '1', SWITCHBOARD_MAX_STREAM_BUFFER_BYTES: '65536' },
    });
    key = await createKey(deployment);
  });
  beforeEach(() => double.reset());
  afterAll(async () => {
    await deployment.close();
    await double.close();
  });

  it('refuses quickly with 503 overloaded when workers are busy and the queue is full', async () => {
    double.script('alpha', { kind: 'text', text: 'slow', chunkDelayMs: 800 });
    const running = chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
    await eventually(() => expect(double.requests).toHaveLength(1));
    const queued = chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const startedAt = Date.now();
    const refused = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello });
    expect(Date.now() - startedAt).toBeLessThan(500);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await refused.json()).error).toMatchObject({ type: 'server_error', code: 'overloaded' });
    expect((await running).status).toBe(200);
    expect((await queued).status).toBe(200);
  });

  it('cuts off a reader that stops reading instead of buffering without bound, and cancels upstream', async () => {
    const piece = 'x'.repeat(2048);
    double.script('alpha', { kind: 'text', chunks: Array.from({ length: 8000 }, () => piece), chunkDelayMs: 1 });
    const url = new URL(deployment.url());
    const socket = connect(Number(url.port), url.hostname);
    const body = JSON.stringify({ model: 'svc/alpha', messages: hello, stream: true });
    let received = 0;
    let stuck = true;
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('data', (data) => {
      received += data.length;
      // Read the first bytes, then stop reading entirely, like a stuck client.
      if (stuck) socket.pause();
    });
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await eventually(() => expect(double.aborted.map((entry) => entry.model)).toContain('alpha'), 10_000);
    expect(received).toBeGreaterThan(0);
    // The gateway closed the connection: once the client reads again, it sees the end.
    stuck = false;
    socket.resume();
    await closed;
  }, 20_000);
});
