import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useGateway } from './http/gateway-context.js';

// OpenAI's Codex CLI in exec mode, configured with a custom provider (wire_api = "responses")
// whose base URL is the gateway, completes a prompt against the Chat Completions provider double.
// docs/responses.md shows the same configuration for users. A recording proxy between Codex and
// the gateway shows what Codex sent.

const codexBin = fileURLToPath(new URL('../node_modules/.bin/codex', import.meta.url));
const context = useGateway('embedded');

function runCodex(args: string[], environment: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(codexBin, args, { cwd, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Forwards everything to the gateway and keeps the JSON bodies Codex POSTed. */
async function startRecordingProxy(target: () => string): Promise<{ url: string; bodies: Array<Record<string, unknown>>; close(): Promise<void> }> {
  const bodies: Array<Record<string, unknown>> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST') bodies.push(JSON.parse(body.toString('utf8')));
      const upstream = http.request(`${target()}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('the Codex CLI', () => {
  let home: string;
  let workdir: string;
  let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'sb-codex-home-'));
    workdir = mkdtempSync(join(tmpdir(), 'sb-codex-work-'));
    proxy = await startRecordingProxy(() => context.deployment.url());
  });
  afterAll(async () => {
    await proxy?.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(workdir, { recursive: true, force: true });
  });

  const environment = () => ({ PATH: process.env.PATH ?? '', HOME: home, CODEX_HOME: home, SWITCHBOARD_API_KEY: context.key.key, RUST_LOG: 'error' });

  beforeAll(() => {
    writeFileSync(
      join(home, 'config.toml'),
      [
        'model = "svc/alpha"',
        'model_provider = "switchboard"',
        'check_for_update_on_startup = false',
        '',
        '[model_providers.switchboard]',
        'name = "Switchboard"',
        `base_url = "${proxy.url}/v1"`,
        'env_key = "SWITCHBOARD_API_KEY"',
        'wire_api = "responses"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
      ].join('\n'),
    );
  });

  it('completes a prompt in exec mode through a wire_api = "responses" provider', async () => {
    context.double.script('alpha', { kind: 'text', chunks: ['Codex ', 'reached ', 'the ', 'gateway.'] });
    const result = await runCodex(['exec', '--skip-git-repo-check', 'Say that Codex reached the gateway.'], environment(), workdir);
    expect(result.stdout.trim().split('\n').at(-1), `${result.stdout}\n${result.stderr}`).toBe('Codex reached the gateway.');
    expect(result.code).toBe(0);
    const upstream = context.double.requests.find((request) => request.body.stream === true)!;
    expect(upstream.body.messages.at(-1)).toMatchObject({ role: 'user' });
    // Codex sent its hosted web_search tool and store: false; the tool was dropped, its function tools reached the provider.
    const sent = proxy.bodies.at(-1)!;
    expect(sent).toMatchObject({ model: 'svc/alpha', stream: true, store: false });
    expect(sent.tools).toContainEqual(expect.objectContaining({ type: 'web_search' }));
    const tools: string[] = upstream.body.tools.map((tool: { function: { name: string } }) => tool.function.name);
    expect(tools).toContain('exec_command');
    expect(tools).not.toContain('web_search');
  }, 90_000);

  it('runs a tool the model calls and sends its output back in the next request', async () => {
    context.double.script('alpha', { kind: 'tool_call', name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo codex-tool-ok' }) }, { kind: 'text', text: 'The command printed codex-tool-ok.' });
    const result = await runCodex(['exec', '--skip-git-repo-check', 'Run echo codex-tool-ok.'], environment(), workdir);
    expect(result.stdout.trim().split('\n').at(-1), `${result.stdout}\n${result.stderr}`).toBe('The command printed codex-tool-ok.');
    const followUp = context.double.requests.filter((request) => request.body.stream === true).at(-1)!;
    const toolMessage = followUp.body.messages.find((message: { role: string }) => message.role === 'tool');
    expect(toolMessage.content).toContain('codex-tool-ok');
  }, 90_000);
});
