import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { startEmbeddedGateway } from '../src/embedded-gateway.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicProviderDouble, type AnthropicProviderDouble } from './doubles/anthropic-provider-double.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { claudeBinary, claudeEnvironment, runClaude } from './fixtures/claude-code/record-claude-code.js';
import { adminRequest, createKey, eventually, ledgerView, type CreatedKey } from './support/api-client.js';
import { startEmbeddedDeployment, testAdminToken, testUpstreamKey, type TestDeployment } from './support/gateway-harness.js';
import { claudeCodeLimits, claudeCodeModelNames } from './support/test-catalog.js';

// The real Claude Code CLI (node_modules/.bin/claude, 2.1.197) pointed at the embedded gateway
// with nothing but ANTHROPIC_BASE_URL and a Switchboard key, as docs/claude-code.md tells users to:
// it must print the model's answer and exit 0, its default model names must resolve through the
// catalog aliases, a tool call must make the round trip through Claude Code's own tool runner, and
// the ledger must bill it. Claude Code runs offline (no telemetry, no updates) with a throw-away HOME.

const available = existsSync(claudeBinary);
if (!available) console.warn(`\n\n*** claude-code.test.ts SKIPPED: the Claude Code CLI is missing at ${claudeBinary} (devDependency @anthropic-ai/claude-code). Claude Code compatibility is NOT tested. ***\n\n`);

let anthropic: AnthropicProviderDouble;
let openai: OpenAiProviderDouble;
let deployment: TestDeployment;
let key: CreatedKey;
let home: string;
let work: string;

async function ledgerCount(): Promise<number> {
  const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}`);
  return body.data.length;
}

async function claude(args: string[], auth: 'api-key' | 'auth-token' = 'api-key', extra: Record<string, string> = {}) {
  const environment = { ...claudeEnvironment(deployment.url(), key.key, home), ...extra };
  if (auth === 'auth-token') {
    delete environment.ANTHROPIC_API_KEY;
    environment.ANTHROPIC_AUTH_TOKEN = key.key;
  }
  const result = await runClaude(args, environment, work, 45_000);
  // On failure the CLI's own words are the diagnosis.
  if (result.code !== 0) console.error(`claude ${args.join(' ')} exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return result;
}

(available ? describe : describe.skip)('Claude Code against the gateway', () => {
  beforeAll(async () => {
    [anthropic, openai] = await Promise.all([startAnthropicProviderDouble({ apiKey: 'test-anthropic-key' }), startOpenAiProviderDouble({ apiKey: testUpstreamKey })]);
    deployment = await startEmbeddedDeployment({
      openAiUrl: openai.url,
      anthropicUrl: anthropic.url,
      aliases: { 'claude-test': [...claudeCodeModelNames] },
      modelLimits: { 'claude-test': claudeCodeLimits },
    });
    key = await createKey(deployment, { name: 'claude code' });
    home = mkdtempSync(path.join(tmpdir(), 'claude-home-'));
    work = mkdtempSync(path.join(tmpdir(), 'claude-work-'));
  }, 60_000);
  beforeEach(() => {
    anthropic.reset();
    openai.reset();
  });
  afterAll(async () => {
    await deployment?.close();
    await Promise.all([anthropic?.close(), openai?.close()]);
    if (home) rmSync(home, { recursive: true, force: true });
    if (work) rmSync(work, { recursive: true, force: true });
  }, 30_000);

  it.each([
    ['its default model', [], 'claude-opus-4-8'],
    ['--model sonnet', ['--model', 'sonnet'], 'claude-sonnet-5'],
    ['--model haiku', ['--model', 'haiku'], 'claude-haiku-4-5-20251001'],
  ])('prints the answer and exits 0 with %s', async (_name, modelArgs, sentModel) => {
    const before = await ledgerCount();
    anthropic.script('claude-test', { kind: 'blocks', blocks: [{ type: 'thinking', thinking: 'Greet back.', signature: 'sig-e2e' }, { type: 'text', text: 'Hello from Switchboard!' }], usage: { input_tokens: 1200, output_tokens: 9 } });
    const result = await claude(['-p', 'say hi', ...modelArgs]);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('Hello from Switchboard!');
    const calls = anthropic.requests.filter((request) => request.url.startsWith('/v1/messages') && !request.url.startsWith('/v1/messages/'));
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(calls.every((request) => request.model === 'claude-test')).toBe(true);
    // Claude Code's beta header reached the provider, as its gateway guide requires.
    expect(calls[0]!.headers['anthropic-beta']).toContain('claude-code-20250219');
    expect(calls[0]!.body.model).toBe('claude-test');
    // Every model call Claude Code made is in the ledger, served by svc/claude-test.
    await eventually(async () => expect((await ledgerCount()) - before).toBe(calls.length));
    const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}`);
    const latest = (body.data as Array<Record<string, unknown>>).slice(0, calls.length).map(ledgerView);
    expect(latest.map((entry) => entry.servedModel)).toEqual(calls.map(() => 'svc/claude-test'));
    // Asked for by the name Claude Code sent (or the id it resolved to).
    for (const entry of latest) expect([sentModel, 'svc/claude-test']).toContain(entry.requestedModel);
  }, 60_000);

  it('sends the catalog id set in ANTHROPIC_DEFAULT_OPUS_MODEL for its default model (the README\'s set-up for the default catalog)', async () => {
    const before = await ledgerCount();
    anthropic.script('claude-test', { kind: 'blocks', blocks: [{ type: 'text', text: 'Mapped by the environment.' }], usage: { input_tokens: 50, output_tokens: 5 } });
    const result = await claude(['-p', 'say hi'], 'api-key', { ANTHROPIC_DEFAULT_OPUS_MODEL: 'svc/claude-test' });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('Mapped by the environment.');
    await eventually(async () => expect((await ledgerCount()) - before).toBeGreaterThanOrEqual(1));
    const { body } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1`);
    expect(ledgerView(body.data[0]).requestedModel).toBe('svc/claude-test');
  }, 60_000);

  it("reports the provider's usage, cache reads and writes included, as Claude Code would see it from Anthropic", async () => {
    anthropic.script('claude-test', { kind: 'text', text: 'counted', usage: { input_tokens: 1234, output_tokens: 7, cache_read_input_tokens: 5000, cache_creation_input_tokens: 300 } });
    const result = await claude(['-p', 'say hi', '--output-format', 'json']);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { result: string; usage: Record<string, unknown> };
    expect(report.result).toBe('counted');
    expect(report.usage).toMatchObject({ input_tokens: 1234, output_tokens: 7, cache_read_input_tokens: 5000, cache_creation_input_tokens: 300 });
  }, 60_000);

  it('runs a tool through Claude Code and sends its result back, thinking signature intact, with a Bearer token', async () => {
    const before = await ledgerCount();
    anthropic.script(
      'claude-test',
      {
        kind: 'blocks',
        blocks: [
          { type: 'thinking', thinking: 'I will print the marker.', signature: 'EqQBCkYIBxgCKkB-e2e-signature==' },
          { type: 'tool_use', name: 'Bash', input: { command: 'echo switchboard-tool-ok', description: 'Print the marker' } },
        ],
      },
      { kind: 'text', text: 'The marker was printed.' },
    );
    const result = await claude(['-p', 'print the marker with echo', '--allowedTools', 'Bash(echo:*)'], 'auth-token');
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('The marker was printed.');
    const second = anthropic.requests.filter((request) => request.url.startsWith('/v1/messages?') || request.url === '/v1/messages')[1]!;
    const turns = second.body.messages as Array<{ role: string; content: unknown }>;
    const assistant = turns.filter((turn) => turn.role === 'assistant').at(-1)!;
    expect(assistant.content).toContainEqual({ type: 'thinking', thinking: 'I will print the marker.', signature: 'EqQBCkYIBxgCKkB-e2e-signature==' });
    const results = (turns.at(-1)!.content as Array<{ type: string; content?: unknown; is_error?: boolean }>).filter((block) => block.type === 'tool_result');
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results[0]!.content)).toContain('switchboard-tool-ok');
    expect(results[0]!.is_error).not.toBe(true);
    // Both turns are billed to the key.
    await eventually(async () => expect((await ledgerCount()) - before).toBe(2));
  }, 60_000);

  it('rides out an upstream rate limit: the 429 and its retry-after reach Claude Code, which retries', async () => {
    anthropic.script('claude-test', { kind: 'error', status: 429, retryAfter: '1' }, { kind: 'text', text: 'After the wait.' });
    const result = await claude(['-p', 'say hi']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('After the wait.');
    expect(anthropic.requests.filter((request) => !request.url.startsWith('/v1/messages/')).length).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('works on an OpenAI-wire model too: --model svc/alpha, a Bash tool call translated both ways', async () => {
    openai.script('alpha', { kind: 'tool_call', name: 'Bash', arguments: JSON.stringify({ command: 'echo switchboard-openai-ok', description: 'Print the marker' }) }, { kind: 'text', text: 'Done on alpha.' });
    const result = await claude(['-p', 'print the marker with echo', '--model', 'svc/alpha', '--allowedTools', 'Bash(echo:*)']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('Done on alpha.');
    expect(anthropic.requests).toHaveLength(0);
    const [first, second] = openai.requests;
    expect(first!.body.model).toBe('alpha');
    // Claude Code's tools arrive as functions.
    const tools = (first!.body.tools as Array<{ type: string; function: { name: string } }>).map((tool) => `${tool.type}:${tool.function.name}`);
    expect(tools).toContain('function:Bash');
    const turns = second!.body.messages as Array<{ role: string; content?: unknown; tool_calls?: Array<{ id: string }>; tool_call_id?: string }>;
    const call = turns.find((turn) => turn.role === 'assistant' && turn.tool_calls)!.tool_calls![0]!;
    const answer = turns.find((turn) => turn.role === 'tool')!;
    expect(answer.tool_call_id).toBe(call.id);
    expect(JSON.stringify(answer.content)).toContain('switchboard-openai-ok');
  }, 60_000);
});

// Without a catalog file the gateway serves its default catalog. It answers to the names of the
// Anthropic models it prices; Claude Code 2.1.197's newest defaults (claude-opus-4-8,
// claude-sonnet-5) have no published price the catalog could bill, so they are refused with a 400
// that says how to map them (ANTHROPIC_DEFAULT_*_MODEL or catalog aliases), never served unbilled or
// by another model in disguise. count_tokens resolves the model without calling any provider.
describe('the default catalog and the model names Claude Code 2.1.197 sends', () => {
  let gateway: Awaited<ReturnType<typeof startEmbeddedGateway>>;
  let dataDir: string;
  let serviceKey: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-default-catalog-'));
    gateway = await startEmbeddedGateway({
      environment: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_ADMIN_TOKEN: testAdminToken, LOG_LEVEL: 'silent' },
    });
    const deployment: TestDeployment = { kind: 'embedded', urls: [gateway.url], adminToken: gateway.adminToken, url: () => gateway.url, close: () => gateway.close() };
    serviceKey = (await createKey(deployment, { name: 'default catalog' })).key;
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  const countTokens = (model: string) =>
    fetch(`${gateway.url}/v1/messages/count_tokens?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': serviceKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'say hi' }] }),
    });

  it.each([
    ['--model haiku', 'claude-haiku-4-5-20251001'],
    ['ANTHROPIC_DEFAULT_SONNET_MODEL=svc/claude-sonnet-4-5', 'svc/claude-sonnet-4-5'],
    ['a dated Sonnet name', 'claude-sonnet-4-5-20250929'],
  ])('resolves the name sent by %s (%s)', async (_choice, model) => {
    const response = await countTokens(model);
    expect({ model, status: response.status, body: await response.json() }).toMatchObject({ model, status: 200, body: { input_tokens: expect.any(Number) } });
  });

  it.each([
    ['its default and --model opus', 'claude-opus-4-8'],
    ['--model sonnet', 'claude-sonnet-5'],
  ])('refuses the unpriced name sent by %s (%s) with a 400 that says how to map it', async (_choice, model) => {
    const response = await countTokens(model);
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(body.error.message).toContain('aliases');
  });
});
