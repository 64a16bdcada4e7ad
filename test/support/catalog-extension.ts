import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testCatalogYaml, type TestCatalogOptions } from './test-catalog.js';

// The test catalog plus providers and models of a test's own (an HTML-speaking proxy, a closed
// port, an odd upstream model name), written to a file the harness's SWITCHBOARD_CATALOG can name.

export interface ExtraModel {
  id: string;
  /** One deployment, or `deployments` for several. */
  provider?: string;
  upstreamModel?: string;
  deployments?: Array<{ provider: string; upstreamModel: string }>;
  prices?: [number, number];
}

export interface ExtraProvider {
  name: string;
  api: 'openai' | 'anthropic' | 'gemini';
  baseUrl: string;
  apiKey: string;
}

export function extendedCatalogFile(options: TestCatalogOptions, providers: ExtraProvider[], models: ExtraModel[]): string {
  const base = testCatalogYaml(options);
  const providerLines = providers.flatMap((provider) => [
    `  ${provider.name}:`,
    `    api: ${provider.api}`,
    `    base_url: ${provider.baseUrl}`,
    `    api_key: ${provider.apiKey}`,
    '    timeouts: { connect_ms: 1000, first_token_ms: 1500, total_ms: 6000 }',
    '    cooldown_ms: 0',
  ]);
  const modelLines = models.flatMap((model) => [
    `  - id: ${model.id}`,
    ...(model.deployments
      ? ['    deployments:', ...model.deployments.map((entry) => `      - { provider: ${entry.provider}, upstream_model: ${JSON.stringify(entry.upstreamModel)} }`)]
      : [`    provider: ${model.provider}`, `    upstream_model: ${JSON.stringify(model.upstreamModel)}`]),
    '    context_length: 32768',
    '    max_output_tokens: 1000',
    `    pricing: { prompt_usd_per_million: ${model.prices?.[0] ?? 1}, completion_usd_per_million: ${model.prices?.[1] ?? 2} }`,
  ]);
  const yaml = base.replace('\nmodels:\n', `\n${providerLines.join('\n')}\nmodels:\n`) + `${modelLines.join('\n')}\n`;
  const file = join(mkdtempSync(join(tmpdir(), 'switchboard-catalog-')), 'catalog.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** A server answering every request with one fixed response, as a misconfigured proxy in front of a provider would. */
export async function startFixedResponder(status: number, contentType: string, body: string): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server = http.createServer((request, response) => {
    hits += 1;
    request.resume();
    request.on('end', () => {
      response.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
