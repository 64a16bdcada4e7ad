import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { buildCatalog, CatalogError, parseCatalogText } from '../src/shared/catalog/catalog-loader.js';
import { createKey } from './support/api-client.js';
import { testAdminToken } from './support/gateway-harness.js';

// `kind: embeddings` in an operator's catalog (what it must and must not say), and the embedding
// models of the built-in catalog as a client of a freshly started gateway sees them.

const providers = `providers:
  oa: { api: openai, base_url: 'http://127.0.0.1:9/v1' }
  an: { api: anthropic, base_url: 'http://127.0.0.1:9/v1' }
models:
`;

function load(models: string): unknown {
  return buildCatalog(parseCatalogText(providers + models, 'catalog.yaml'), {});
}

describe('kind: embeddings in a catalog file', () => {
  it('loads an embedding model priced per million input tokens only', () => {
    const catalog = load(`  - { id: svc/e, kind: embeddings, provider: oa, upstream_model: e, context_length: 8192, pricing: { prompt_usd_per_million: 0.02 } }\n`) as ReturnType<typeof buildCatalog>;
    expect(catalog.models.get('svc/e')).toMatchObject({ kind: 'embeddings', pricing: { promptUsdPerMillion: 0.02, completionUsdPerMillion: 0 } });
  });

  it.each([
    ['an embedding model on a provider without an embeddings endpoint', `  - { id: svc/e, kind: embeddings, provider: an, upstream_model: e, context_length: 8192, pricing: { prompt_usd_per_million: 1 } }\n`, "provider 'an' speaks anthropic, which has no embeddings endpoint"],
    ['a completion price on an embedding model', `  - { id: svc/e, kind: embeddings, provider: oa, upstream_model: e, context_length: 8192, pricing: { prompt_usd_per_million: 1, completion_usd_per_million: 1 } }\n`, 'billed per input token only'],
    ['a chat model without a completion price', `  - { id: svc/c, provider: oa, upstream_model: c, context_length: 8192, pricing: { prompt_usd_per_million: 1 } }\n`, 'pricing.completion_usd_per_million: a model without a price would be billed $0'],
    [
      'a chat model falling back to an embedding model',
      `  - { id: svc/c, provider: oa, upstream_model: c, context_length: 8192, pricing: { prompt_usd_per_million: 1, completion_usd_per_million: 1 }, fallbacks: [svc/e] }\n  - { id: svc/e, kind: embeddings, provider: oa, upstream_model: e, context_length: 8192, pricing: { prompt_usd_per_million: 1 } }\n`,
      'Model svc/c (chat) names the fallback svc/e, which is an embeddings model',
    ],
  ])('refuses %s', (_name, models, message) => {
    expect(() => load(models)).toThrow(CatalogError);
    expect(() => load(models)).toThrow(message);
  });
});

describe('the built-in catalog', () => {
  let gateway: EmbeddedGateway;
  let dataDir: string;
  let client: OpenAI;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'switchboard-default-catalog-'));
    gateway = await startEmbeddedGateway({ environment: { PORT: '0', HOST: '127.0.0.1', SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_ADMIN_TOKEN: testAdminToken, LOG_LEVEL: 'silent' } });
    const key = await createKey({ kind: 'embedded', urls: [gateway.url], adminToken: gateway.adminToken, url: () => gateway.url, close: async () => undefined });
    client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key.key, maxRetries: 0 });
  }, 30_000);
  afterAll(async () => {
    await gateway?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lists real embedding models at their public prices per million input tokens', async () => {
    const embeddings: Array<[string, number]> = [];
    for await (const model of client.models.list()) {
      const entry = model as unknown as { id: string; kind: string; pricing_usd_per_million: { prompt: number } };
      if (entry.kind === 'embeddings') embeddings.push([entry.id, entry.pricing_usd_per_million.prompt]);
    }
    expect(embeddings).toEqual([
      ['svc/text-embedding-3-small', 0.02],
      ['svc/text-embedding-3-large', 0.13],
      ['svc/text-embedding-ada-002', 0.1],
      ['svc/gemini-embedding-001', 0.15],
      ['svc/mistral-embed', 0.1],
    ]);
  });

  it("answers to the providers' own model names", async () => {
    expect((await client.models.retrieve('text-embedding-3-small')).id).toBe('svc/text-embedding-3-small');
    expect((await client.models.retrieve('gemini-embedding-001')).id).toBe('svc/gemini-embedding-001');
  });

  it('says which key is missing when an embedding model is asked for without it', async () => {
    const error = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hi' }).catch((caught) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(503);
    expect(error.error).toMatchObject({ code: 'provider_not_configured' });
    expect(error.message).toContain('OPENAI_API_KEY');
  });
});
