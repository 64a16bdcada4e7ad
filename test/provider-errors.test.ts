import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AnthropicProviderDouble } from './doubles/anthropic-provider-double.js';
import type { GeminiProviderDouble } from './doubles/gemini-provider-double.js';
import type { OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { parseSseText } from './doubles/sse.js';
import { adminRequest, chat, createKey, eventually, hello, type CreatedKey } from './support/api-client.js';
import { closedPort, extendedCatalogFile, startFixedResponder } from './support/catalog-extension.js';
import { startEmbeddedDeployment, testUpstreamKey, type TestDeployment } from './support/gateway-harness.js';
import { anthropicDoubleKey as anthropicKey, geminiDoubleKey as geminiKey, startProviderDoubles, type ProviderDoubles } from './support/provider-doubles.js';

// What clients, the ledger and the logs learn when a provider fails. A provider's text can carry
// the gateway's own key, internal host names or a whole HTML page: failures that are not the
// client's doing answer with a message of ours naming the attempt; a provider's 400 about the
// request keeps its words (clients such as Claude Code act on "prompt is too long"), redacted and
// capped. The ledger keeps the provider's text, redacted and truncated.

/** A key-shaped secret a provider might echo; it must be redacted wherever the text goes. */
const leakedKey = 'sk-proj-Zx81abcDEFghiJKLmnoPQRstu0987654321';
const internalHost = 'billing-7.corp.internal:8443';
const htmlPage = `<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><p>upstream ${internalHost} failed</p>${'<!-- padding -->'.repeat(12_000)}<hr>nginx/1.25.3</body></html>`;

let doubles: ProviderDoubles;
let openAi: OpenAiProviderDouble;
let anthropic: AnthropicProviderDouble;
let gemini: GeminiProviderDouble;
let htmlProxy: Awaited<ReturnType<typeof startFixedResponder>>;
let htmlOkProxy: Awaited<ReturnType<typeof startFixedResponder>>;
let deadPort: number;
let deployment: TestDeployment;
let key: CreatedKey;

beforeAll(async () => {
  doubles = await startProviderDoubles();
  ({ openai: openAi, anthropic, gemini } = doubles);
  htmlProxy = await startFixedResponder(502, 'text/html', htmlPage);
  htmlOkProxy = await startFixedResponder(200, 'text/html', htmlPage);
  deadPort = await closedPort();
  const options = { openAiUrl: openAi.url, anthropicUrl: anthropic.url, geminiUrl: gemini.url };
  const catalog = extendedCatalogFile(
    options,
    [
      { name: 'html-proxy', api: 'openai', baseUrl: htmlProxy.url, apiKey: 'proxy-key-1234' },
      { name: 'html-ok-proxy', api: 'openai', baseUrl: htmlOkProxy.url, apiKey: 'proxy-key-1234' },
      { name: 'dead', api: 'openai', baseUrl: `http://127.0.0.1:${deadPort}/v1`, apiKey: 'dead-key-1234' },
    ],
    [
      { id: 'svc/behind-proxy', provider: 'html-proxy', upstreamModel: 'proxied' },
      { id: 'svc/proxy-200', provider: 'html-ok-proxy', upstreamModel: 'proxied' },
      { id: 'svc/unreachable', provider: 'dead', upstreamModel: 'unreachable' },
    ],
  );
  deployment = await startEmbeddedDeployment({ ...options, environment: { SWITCHBOARD_CATALOG: catalog } });
  key = await createKey(deployment, { name: 'provider errors' });
}, 60_000);
beforeEach(() => doubles.reset());
afterAll(async () => {
  await deployment?.close();
  await Promise.all([doubles?.close(), htmlProxy?.close(), htmlOkProxy?.close()]);
}, 30_000);

async function ask(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const response = await chat(deployment, key.key, { messages: hello, ...body });
  return { status: response.status, body: await response.json() };
}

/** The ledger's attempts of the key's latest request. */
async function latestAttempts(): Promise<Array<{ model: string; outcome: string; message?: string }>> {
  return eventually(async () => {
    const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1`);
    expect(body.data.length).toBe(1);
    return body.data[0].attempts;
  });
}

const secrets = [testUpstreamKey, leakedKey, anthropicKey, geminiKey, internalHost];

function expectNoSecrets(text: string): void {
  for (const secret of secrets) expect(text).not.toContain(secret);
}

describe('failures that are not the client\'s doing answer with a message of ours', () => {
  it('a provider refusing our key (401) that echoes it back: our message names the attempt; the key is nowhere', async () => {
    openAi.script('alpha', { kind: 'error', status: 401, message: `Incorrect API key provided: ${testUpstreamKey}. Ask ${internalHost}.` });
    openAi.script('beta', { kind: 'error', status: 500, message: `Backend ${internalHost} crashed with key ${leakedKey}` });
    const { status, body } = await ask({ model: 'svc/alpha', fallbacks: ['svc/beta'] });
    expect(status).toBe(502);
    expect(body.error.code).toBe('upstream_error');
    expect(body.error.message).toMatch(/attempt 1, svc\/alpha: refused the gateway credentials 401 \(.*API key.*\); attempt 2, svc\/beta: server error 500 \(the provider reported an internal error\)/);
    expectNoSecrets(JSON.stringify(body));
    const attempts = await latestAttempts();
    // The ledger keeps what the provider said, with the secrets taken out.
    expect(attempts[0]!.message).toContain('Incorrect API key provided: [redacted]');
    expect(attempts[1]!.message).toContain('crashed with key [redacted]');
    expect(JSON.stringify(attempts)).not.toContain(testUpstreamKey);
    expect(JSON.stringify(attempts)).not.toContain(leakedKey);
  });

  it('an HTML error page (200 KB, from a proxy) becomes our message; the ledger keeps a truncated copy', async () => {
    const { status, body } = await ask({ model: 'svc/behind-proxy' });
    expect(status).toBe(502);
    expect(body.error.message).toBe('The model svc/behind-proxy: server error 502 (the provider reported an internal error)');
    const attempts = await latestAttempts();
    expect(attempts[0]!.message!.length).toBeLessThanOrEqual(2001);
    expect(attempts[0]!.message).toContain('502 Bad Gateway');
  });

  it('an HTML page with status 200 is an unreadable answer of the provider, not a crash of ours', async () => {
    const { status, body } = await ask({ model: 'svc/proxy-200' });
    expect(status).toBe(502);
    expect(body.error.message).toContain("the provider's answer could not be read");
    expect(body.error.message).not.toContain('<');
  });

  it('a connection failure does not reveal the provider\'s host and port', async () => {
    const { status, body } = await ask({ model: 'svc/unreachable' });
    expect(status).toBe(502);
    expect(body.error.message).toMatch(/svc\/unreachable: connection failed \(the connection to the provider failed \(ECONNREFUSED\)\)/);
    expect(body.error.message).not.toContain(String(deadPort));
    expect(body.error.message).not.toContain('127.0.0.1');
  });

  it('Anthropic refusing our key: our message, the key is nowhere', async () => {
    anthropic.script('claude-test', { kind: 'error', status: 401, message: `invalid x-api-key ${anthropicKey}` });
    const { status, body } = await ask({ model: 'svc/claude-test' });
    expect(status).toBe(502);
    expect(body.error.message).toContain("the provider refused the gateway's credentials");
    expectNoSecrets(JSON.stringify(body));
  });

  it('Gemini refusing permission (403): our message', async () => {
    gemini.script('gemini-test', { kind: 'error', status: 403, message: `Permission denied for project at ${internalHost}` });
    const { status, body } = await ask({ model: 'svc/gemini-test' });
    expect(status).toBe(502);
    expect(body.error.message).toContain("the provider refused the gateway's credentials");
    expectNoSecrets(JSON.stringify(body));
  });

  it('an error event before the first token falls back, and its text is not passed on', async () => {
    const fixtureDir = mkdtempSync(join(tmpdir(), 'switchboard-fixture-'));
    const fixture = join(fixtureDir, 'early-error.sse');
    writeFileSync(fixture, `data: ${JSON.stringify({ error: { message: `upstream pool ${internalHost} rejected key ${leakedKey}`, type: 'server_error' } })}\n\n`);
    openAi.script('alpha', { kind: 'fixture', file: fixture });
    openAi.script('beta', { kind: 'error', status: 503, message: `overloaded at ${internalHost}` });
    const response = await chat(deployment, key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello, stream: true });
    const body = await response.json();
    expect(response.status).toBe(503); // the last attempt was overloaded: upstream_unavailable, which clients retry
    expect(body.error.message).toContain('svc/alpha: server error (the provider reported an internal error)');
    expectNoSecrets(JSON.stringify(body));
  });

  it('an error after the first token ends the stream with our message, not the provider\'s', async () => {
    openAi.script('alpha', { kind: 'midstream_error', chunksBeforeError: 2 });
    const response = await chat(deployment, key.key, { model: 'svc/alpha', messages: hello, stream: true });
    const events = parseSseText(await response.text());
    const failure = events.map((event) => JSON.parse(event.data)).find((chunk) => chunk.error);
    expect(failure.error.message).toBe('The model svc/alpha failed after the response began: the provider reported an internal error');
    const attempts = await latestAttempts();
    expect(attempts[0]!.message).toMatch(/server had an error/i);
  });
});

describe("a provider's 400 about the request keeps its words, redacted and capped", () => {
  it('OpenAI: "prompt is too long" reaches the client; a key in it does not; 200 KB become a few hundred characters', async () => {
    const text = `This model's maximum context length is 128000 tokens. However, your messages resulted in 210000 tokens (key ${leakedKey}). ${'Please reduce the length of the messages. '.repeat(5000)}`;
    openAi.script('alpha', { kind: 'error', status: 400, message: text, code: 'context_length_exceeded' });
    const { status, body } = await ask({ model: 'svc/alpha' });
    expect(status).toBe(400);
    expect(body.error.code).toBe('upstream_bad_request');
    expect(body.error.message).toContain("This model's maximum context length is 128000 tokens. However, your messages resulted in 210000 tokens (key [redacted])");
    expect(body.error.message.length).toBeLessThan(700);
    expectNoSecrets(JSON.stringify(body));
  });

  it('Anthropic: "prompt is too long" is passed on, as Claude Code needs to compact', async () => {
    anthropic.script('claude-test', { kind: 'error', status: 400, type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' });
    const { status, body } = await ask({ model: 'svc/claude-test' });
    expect(status).toBe(400);
    expect(body.error.message).toContain('prompt is too long: 210000 tokens > 200000 maximum');
  });

  it('Gemini: an invalid argument is passed on with key-like values redacted', async () => {
    gemini.script('gemini-test', { kind: 'error', status: 400, message: `Invalid JSON payload received. api_key=AIzaSyA1234567890abcdefghijklmnopqrstu unknown field "foo"` });
    const { status, body } = await ask({ model: 'svc/gemini-test' });
    expect(status).toBe(400);
    expect(body.error.message).toContain('Invalid JSON payload received. api_key=[redacted] unknown field "foo"');
    expect(body.error.message).not.toContain('AIzaSy');
  });
});
