import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

// Child processes of a benchmark run: each logs to its own file, and every one started is stopped
// (by its own pid) when the run ends, however it ends.

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  logPath: string;
  exited: boolean;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  logTail(lines?: number): string;
}

const started = new Set<Child>();

export const repoRoot = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

export function startChild(name: string, command: string, args: string[], options: { env?: NodeJS.ProcessEnv; logDir: string; cwd?: string; stdin?: 'pipe' | 'ignore' }): Child {
  const logPath = join(options.logDir, `${name}.log`);
  const log = openSync(logPath, 'a');
  const child = spawn(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: options.env ?? process.env,
    stdio: [options.stdin ?? 'ignore', log, log],
  });
  if (child.pid === undefined) throw new Error(`Could not start ${name} (${command}).`);
  const handle: Child = {
    name,
    process: child,
    pid: child.pid,
    logPath,
    exited: false,
    stop: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        if (handle.exited) return resolve();
        const timer = setTimeout(() => {
          if (!handle.exited) child.kill('SIGKILL');
        }, graceMs);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
    logTail: (lines = 15) => {
      try {
        return readFileSync(logPath, 'utf8').split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    },
  };
  child.once('exit', () => {
    handle.exited = true;
    started.delete(handle);
  });
  started.add(handle);
  return handle;
}

/** Stops every child still running (used on the way out, also after a failure). */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...started].map((child) => child.stop(3000)));
}

/** Last resort on a hard exit: SIGKILL each remaining child by its pid. */
export function killAllChildrenNow(): void {
  for (const child of started) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `url` until it answers (any HTTP status) or `timeoutMs` passes. */
export async function waitForHttp(url: string, timeoutMs: number, child?: Child): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child?.exited) throw new Error(`${child.name} exited while starting:\n${child.logTail()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms${child ? `:\n${child.logTail()}` : ''}`);
      await sleep(100);
    }
  }
}

/** Waits until the child's log contains `pattern`; returns the first match. */
export async function waitForLog(child: Child, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(child.logTail(200));
    if (match) return match;
    if (child.exited) throw new Error(`${child.name} exited while starting:\n${child.logTail()}`);
    if (Date.now() > deadline) throw new Error(`${child.name} did not print ${pattern} within ${timeoutMs} ms:\n${child.logTail()}`);
    await sleep(50);
  }
}
