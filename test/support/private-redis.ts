import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

// A redis-server of the test's own, on a free port, that the test may kill and start again
// (the machine's shared Redis is never touched). Its data folder outlives restarts, so a restart
// keeps whatever its persistence settings keep.

export class PrivateRedis {
  private child?: ChildProcess;
  readonly dir = mkdtempSync(join(tmpdir(), 'sb-private-redis-'));
  port = 0;

  constructor(private readonly settings: string[]) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', ...this.settings], { stdio: 'ignore' });
    this.child = child;
    const probe = new Redis(this.url, { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
    probe.on('error', () => undefined);
    try {
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          await probe.connect().catch(() => undefined);
          if ((await probe.ping()) === 'PONG') return;
        } catch {
          // still starting
        }
        if (Date.now() > deadline || child.exitCode !== null) throw new Error('private redis-server did not start');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      probe.disconnect();
    }
  }

  /** Kills the server as a crash would (SIGKILL: no final save). */
  async crash(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async destroy(): Promise<void> {
    await this.crash();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
