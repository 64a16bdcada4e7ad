import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, runProcess, type RunningProcess } from './process-runner.js';

// A real Prometheus server (Debian's package) on a free port with its own config and data folder,
// scraping the given targets every second with a bearer token, queried through its HTTP API.

export interface PrometheusServer {
  url: string;
  process: RunningProcess;
  /** The result vector of an instant query. */
  query(expression: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  close(): Promise<void>;
}

export async function startPrometheus(targets: string[], bearerToken: string): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(config, [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 900ms',
    'scrape_configs:',
    '  - job_name: switchboard',
    '    authorization:',
    '      type: Bearer',
    `      credentials: ${bearerToken}`,
    '    static_configs:',
    `      - targets: [${targets.map((target) => JSON.stringify(target)).join(', ')}]`,
    '',
  ].join('\n'));
  const port = await freePort();
  const running = runProcess('prometheus', [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--web.enable-lifecycle',
  ], { PATH: process.env.PATH ?? '' }, dir);
  await running.waitFor(/Server is ready to receive web requests/, 30_000);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    process: running,
    async query(expression) {
      const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expression)}`);
      const body = (await response.json()) as { status: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
      if (body.status !== 'success') throw new Error(`Prometheus query failed: ${JSON.stringify(body)}`);
      return body.data.result;
    },
    async close() {
      running.child.kill('SIGTERM');
      const timer = setTimeout(() => running.child.kill('SIGKILL'), 5000);
      await running.exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
