import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway } from '../src/embedded-gateway.js';
import { loadCatalog } from '../src/shared/catalog/catalog-loader.js';
import { defaultCatalogFile } from '../src/shared/catalog/default-catalog.js';
import { testAdminToken } from './support/gateway-harness.js';

// The catalog's cache-aware prices: every default model has all of them spelled out, at the ratios
// the providers publish, and a catalog with a model that has no price does not load at all (a
// gateway that started would bill that model $0).

const directory = mkdtempSync(join(tmpdir(), 'switchboard-pricing-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function catalogFile(name: string, text: string): string {
  const path = join(directory, name);
  writeFileSync(path, text);
  return path;
}

const provider = `providers:
  p: { api: openai, base_url: https://example.invalid/v1 }
`;

type FilePricing = Record<string, number | undefined>;
const chatModels = defaultCatalogFile.models.filter((model) => model.kind !== 'embeddings');
const pricesOf = (id: string): FilePricing => defaultCatalogFile.models.find((model) => model.id === id)!.pricing;

describe('default catalog prices', () => {
  it('gives every chat model and deployment input, output, cache read, cache write and reasoning prices', () => {
    expect(chatModels.length).toBeGreaterThan(20);
    for (const model of chatModels) {
      const all = [model.pricing, ...(model.deployments ?? []).flatMap((deployment) => (deployment.pricing ? [deployment.pricing] : []))];
      for (const pricing of all) {
        for (const field of ['prompt_usd_per_million', 'completion_usd_per_million', 'cache_read_usd_per_million', 'cache_write_usd_per_million', 'reasoning_usd_per_million']) {
          expect((pricing as FilePricing)[field], `${model.id} ${field}`).toBeTypeOf('number');
        }
        expect(pricing.prompt_usd_per_million, `${model.id} input price`).toBeGreaterThan(0);
        expect(pricing.completion_usd_per_million, `${model.id} output price`).toBeGreaterThan(0);
      }
    }
    for (const model of defaultCatalogFile.models.filter((entry) => entry.kind === 'embeddings')) expect(model.pricing.prompt_usd_per_million, model.id).toBeGreaterThan(0);
  });

  it('prices cache reads and writes at the ratios each provider publishes', () => {
    const ratio = (id: string, field: string) => Number(((pricesOf(id)[field] ?? NaN) / pricesOf(id).prompt_usd_per_million!).toFixed(4));
    for (const id of ['svc/claude-opus-4-5', 'svc/claude-opus-4-1', 'svc/claude-sonnet-4-5', 'svc/claude-haiku-4-5']) {
      expect([ratio(id, 'cache_read_usd_per_million'), ratio(id, 'cache_write_usd_per_million'), ratio(id, 'cache_write_1h_usd_per_million')], id).toEqual([0.1, 1.25, 2]);
    }
    for (const id of ['svc/gpt-5', 'svc/gpt-5-mini', 'svc/gpt-5-nano', 'svc/gemini-2.5-pro', 'svc/gemini-2.5-flash', 'svc/gemini-2.5-flash-lite']) expect(ratio(id, 'cache_read_usd_per_million'), id).toBe(0.1);
    for (const id of ['svc/gpt-4.1', 'svc/gpt-4.1-mini', 'svc/o4-mini']) expect(ratio(id, 'cache_read_usd_per_million'), id).toBe(0.25);
    for (const id of ['svc/gpt-4o', 'svc/gpt-4o-mini']) expect(ratio(id, 'cache_read_usd_per_million'), id).toBe(0.5);
    // No cache price published (Groq, Together, Mistral): reads bill at the input price.
    for (const id of ['svc/llama-3.1-8b', 'svc/qwen-2.5-72b', 'svc/mistral-large']) expect(ratio(id, 'cache_read_usd_per_million'), id).toBe(1);
    // Reasoning bills as output everywhere.
    for (const model of chatModels) expect(model.pricing.reasoning_usd_per_million, model.id).toBe(model.pricing.completion_usd_per_million);
  });

  it('loads with every price in the built catalog', () => {
    const catalog = loadCatalog({});
    expect(catalog.models.get('svc/claude-sonnet-4-5')!.deployments[0]!.pricing).toEqual({
      promptUsdPerMillion: 3, completionUsdPerMillion: 15, cacheReadUsdPerMillion: 0.3, cacheWriteUsdPerMillion: 3.75, cacheWrite1hUsdPerMillion: 6, reasoningUsdPerMillion: 15,
    });
  });
});

describe('a model without a price', () => {
  it('is refused at catalog load, with a message that says why', () => {
    const path = catalogFile('no-price.yaml', `${provider}models:\n  - { id: svc/free, provider: p, upstream_model: m, context_length: 1000 }\n`);
    expect(() => loadCatalog({ SWITCHBOARD_CATALOG: path })).toThrow(/invalid at models\.0\.pricing: a model without a price would be billed \$0/);
  });

  it('is refused when only the input price is missing, or the output price of a chat model', () => {
    const noInput = catalogFile('no-input.yaml', `${provider}models:\n  - { id: svc/m, provider: p, upstream_model: m, context_length: 1000, pricing: { completion_usd_per_million: 1 } }\n`);
    expect(() => loadCatalog({ SWITCHBOARD_CATALOG: noInput })).toThrow(/models\.0\.pricing\.prompt_usd_per_million: a model without a price would be billed \$0/);
    const noOutput = catalogFile('no-output.yaml', `${provider}models:\n  - { id: svc/m, provider: p, upstream_model: m, context_length: 1000, pricing: { prompt_usd_per_million: 1 } }\n`);
    expect(() => loadCatalog({ SWITCHBOARD_CATALOG: noOutput })).toThrow(/completion_usd_per_million: a model without a price would be billed \$0/);
  });

  it('stops the gateway from starting', async () => {
    const path = catalogFile('gateway.yaml', `${provider}models:\n  - { id: svc/free, provider: p, upstream_model: m, context_length: 1000, pricing: {} }\n`);
    const dataDir = mkdtempSync(join(directory, 'data-'));
    await expect(startEmbeddedGateway({ environment: { PORT: '0', SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_CATALOG: path, SWITCHBOARD_ADMIN_TOKEN: testAdminToken, LOG_LEVEL: 'silent' } })).rejects.toThrow(/billed \$0/);
  });

  it('takes the documented fallbacks when only some prices are given: cache at the input price, 1-hour writes at the write price, reasoning at the output price', () => {
    const path = catalogFile('partial.yaml', `${provider}models:\n  - { id: svc/m, provider: p, upstream_model: m, context_length: 1000, pricing: { prompt_usd_per_million: 2, completion_usd_per_million: 8, cache_write_usd_per_million: 2.5 } }\n`);
    const pricing = loadCatalog({ SWITCHBOARD_CATALOG: path }).models.get('svc/m')!.pricing;
    expect(pricing).toEqual({ promptUsdPerMillion: 2, completionUsdPerMillion: 8, cacheWriteUsdPerMillion: 2.5 });
  });
});
