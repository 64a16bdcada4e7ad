import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A handler that throws must cost one request, never the process: through the request wrapper the
// client gets a JSON 500, and an exception that escapes every handler is logged, not fatal.

const repoRoot = fileURLToPath(new URL('../', import.meta.url));

describe('exceptions in route handlers', () => {
  let child: ChildProcess;
  let url: string;
  let exited = false;

  beforeAll(async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'test/support/throwing-routes-gateway.ts'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    child.once('exit', () => {
      exited = true;
    });
    url = await new Promise<string>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`not ready: ${output}`)), 30_000);
      const onData = (data: Buffer) => {
        output += data.toString();
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
    });
  }, 60_000);

  afterAll(() => {
    child?.kill('SIGKILL');
  });

  it('answers 500 internal_error in JSON when a handler throws or rejects, and keeps serving', async () => {
    for (const path of ['/test/throws', '/test/rejects']) {
      const response = await fetch(`${url}${path}`);
      expect(response.status, path).toBe(500);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.headers.get('x-request-id')).toBeTruthy();
      const body = (await response.json()) as { error: { code: string; type: string; message: string } };
      expect(body.error.code).toBe('internal_error');
      expect(body.error.type).toBe('server_error');
      // The exception's own message stays in the logs.
      expect(body.error.message).not.toContain('on purpose');
    }
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it('keeps the process up when an exception or a rejection escapes every handler', async () => {
    for (const path of ['/test/unwrapped-throws', '/test/unwrapped-rejects']) {
      expect(await (await fetch(`${url}${path}`)).text()).toBe('partial');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(exited, path).toBe(false);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    }
  });
});
