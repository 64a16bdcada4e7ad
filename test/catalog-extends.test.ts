import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { defaultCatalogFile } from '../src/shared/catalog/default-catalog.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { hello } from './support/api-client.js';
import { testAdminToken } from './support/gateway-harness.js';

// An operator's catalog file with `extends: default` adds to the built-in catalog instead of
// replacing it: a local OpenAI-compatible server (vLLM, llama.cpp, Ollama) next to the hosted
// models, a price of their own for a built-in model, and a built-in provider pointed elsewhere.

const extension = (localUrl: string, openAiUrl: string) => `
extends: default
providers:
  local:                          # a local OpenAI-compatible server: no API key
    api: openai
    base_url: ${localUrl}
  openai:                         # replaces the built-in provider of the same name
    api: openai
    base_url: ${openAiUrl}
    api_key: \${SB_TEST_UPSTREAM_KEY}
models:
  - id: svc/local-llama
    provider: local
    upstream_model: llama3.2:3b
    context_length: 8192
    pricing: { prompt_usd_per_million: 0, completion_usd_per_million: 0 }
  - id: svc/gpt-4o-mini           # replaces the built-in entry: our negotiated price
    provider: openai
    upstream_model: gpt-4o-mini
    context_length: 128000
    max_output_tokens: 16384
    pricing: { prompt_usd_per_million: 0.1, completion_usd_per_million: 0.5 }
`;

async function startWith(catalogText: string, dataDir: string): Promise<EmbeddedGateway> {
  const catalogPath = join(dataDir, 'catalog.yaml');
  writeFileSync(catalogPath, catalogText);
  return startEmbeddedGateway({
    environment: {
      PORT: '0',
      HOST: '127.0.0.1',
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_CATALOG: catalogPath,
      SWITCHBOARD_ADMIN_TOKEN: testAdminToken,
      SB_TEST_UPSTREAM_KEY: 'upstream-secret-key',
      LOG_LEVEL: 'silent',
      SWITCHBOARD_DRAIN_DEADLINE_MS: '2000',
    },
  });
}

describe('a catalog file with extends: default', () => {
  let local: OpenAiProviderDouble;
  let hostedOpenAi: OpenAiProviderDouble;
  let dataDir: string;
  let gateway: EmbeddedGateway;
  let key: string;

  beforeAll(async () => {
    local = await startOpenAiProviderDouble();
    hostedOpenAi = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    dataDir = mkdtempSync(join(tmpdir(), 'switchboard-extends-'));
    gateway = await startWith(extension(local.url, hostedOpenAi.url), dataDir);
    const created = await fetch(`${gateway.url}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${testAdminToken}`, 'content-type': 'application/json' }, body: '{"name":"extends"}' });
    key = (await created.json()).key;
  });

  afterAll(async () => {
    await gateway?.close();
    await local?.close();
    await hostedOpenAi?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lists the built-in models plus the added one, with the overridden price, in GET /v1/models', async () => {
    const response = await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as { data: Array<{ id: string; provider: string; provider_configured: boolean; pricing_usd_per_million: { prompt: number; completion: number } }> };
    const ids = data.map((model) => model.id);
    for (const builtIn of defaultCatalogFile.models) expect(ids).toContain(builtIn.id);
    expect(ids).toContain('svc/local-llama');
    expect(ids).toHaveLength(defaultCatalogFile.models.length + 1);
    expect(new Set(ids).size).toBe(ids.length);

    const localModel = data.find((model) => model.id === 'svc/local-llama')!;
    expect(localModel.provider).toBe('local');
    expect(localModel.provider_configured).toBe(true); // no key needed, none configured
    expect(data.find((model) => model.id === 'svc/gpt-4o-mini')!.pricing_usd_per_million).toMatchObject({ prompt: 0.1, completion: 0.5 });
    // A built-in model the file does not mention keeps its list price.
    const builtInGpt5 = defaultCatalogFile.models.find((model) => model.id === 'svc/gpt-5')!;
    expect(data.find((model) => model.id === 'svc/gpt-5')!.pricing_usd_per_million).toMatchObject({ prompt: builtInGpt5.pricing.prompt_usd_per_million, completion: builtInGpt5.pricing.completion_usd_per_million });
  });

  it('serves the added model from the local server, without sending it a key', async () => {
    local.script('llama3.2:3b', { kind: 'text', text: 'Hello from the local server', usage: { prompt_tokens: 4, completion_tokens: 5 } });
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc/local-llama', messages: hello }),
    });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.model).toBe('svc/local-llama');
    expect(body.choices[0].message.content).toBe('Hello from the local server');
    expect(local.requests.map((request) => request.model)).toEqual(['llama3.2:3b']);
    expect(local.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('sends a built-in model to the provider that replaced the built-in one, and bills the overridden price', async () => {
    hostedOpenAi.script('gpt-4o-mini', { kind: 'text', text: 'Hello from the replaced provider', usage: { prompt_tokens: 1_000_000, completion_tokens: 1_000_000 } });
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc/gpt-4o-mini', messages: hello, max_tokens: 100 }),
    });
    expect(response.status).toBe(200);
    expect((await response.json()).choices[0].message.content).toBe('Hello from the replaced provider');
    expect(hostedOpenAi.requests.at(-1)!.headers.authorization).toBe('Bearer upstream-secret-key');
    const usage = await fetch(`${gateway.url}/admin/v1/usage?model=svc/gpt-4o-mini`, { headers: { authorization: `Bearer ${testAdminToken}` } });
    const rows = (await usage.json()).data as Array<{ cost_usd: number | string }>;
    // 1M prompt tokens at 0.1 plus 1M completion tokens at 0.5 (the built-in price would be 0.75).
    expect(Number(rows[0]!.cost_usd)).toBeCloseTo(0.6, 9);
  });
});

describe('a catalog file that does not extend', () => {
  it('still replaces the built-in catalog, and a bad extends value stops the start naming the field', async () => {
    const local = await startOpenAiProviderDouble();
    const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-extends-'));
    try {
      const replacing = extension(local.url, local.url).replace('extends: default\n', '').replace(/\n {2}- id: svc\/gpt-4o-mini[\s\S]*$/, '\n');
      const gateway = await startWith(replacing.replace(/ {2}openai:[\s\S]*?(?=models:)/, ''), dataDir);
      try {
        const created = await fetch(`${gateway.url}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${testAdminToken}` }, body: '{"name":"replace"}' });
        const { key } = await created.json();
        const { data } = await (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json();
        expect(data.map((model: { id: string }) => model.id)).toEqual(['svc/local-llama']);
      } finally {
        await gateway.close();
      }
      await expect(startWith('extends: builtin\nmodels: []\n', dataDir)).rejects.toThrow(/invalid at extends/);
    } finally {
      await local.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
