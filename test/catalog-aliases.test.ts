import OpenAI from 'openai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { buildCatalog, CatalogError, parseCatalogText } from '../src/shared/catalog/catalog-loader.js';
import { defaultCatalogFile } from '../src/shared/catalog/default-catalog.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { testAdminToken, testEnvironment } from './support/gateway-harness.js';

// Catalog aliases (other names of a model, on every API) and per-model default fallbacks.

const provider = (url: string) => `providers:\n  p:\n    api: openai\n    base_url: ${url}\n    api_key: k\n    cooldown_ms: 0\n`;
const model = (name: string, extra = '') =>
  `  - id: svc/${name}\n    provider: p\n    upstream_model: ${name}\n    context_length: 1000\n    max_output_tokens: 100\n    pricing: { prompt_usd_per_million: 1, completion_usd_per_million: 2 }\n${extra}`;

describe('catalog validation of aliases and fallbacks', () => {
  const load = (models: string) => () => buildCatalog(parseCatalogText(`${provider('http://127.0.0.1:1')}models:\n${models}`, 'catalog.yaml'), {});

  it('refuses an alias given to two models, or equal to another model id', () => {
    expect(load(model('a', '    aliases: [shared]\n') + model('b', '    aliases: [shared]\n'))).toThrow(/alias shared is given to both svc\/a and svc\/b/);
    expect(load(model('a', '    aliases: [svc/b]\n') + model('b'))).toThrow(CatalogError);
  });

  it('refuses fallbacks that name unknown models or the model itself', () => {
    expect(load(model('a', '    fallbacks: [svc/missing]\n'))).toThrow(/fallback svc\/missing, which the catalog does not define/);
    expect(load(model('a', '    aliases: [first]\n    fallbacks: [first]\n'))).toThrow(/names itself as a fallback/);
  });

  it('maps every alias to its model, and the default catalog answers to Anthropic\'s own model names', () => {
    expect(buildCatalog(defaultCatalogFile, {}).aliases.get('claude-sonnet-4-5-20250929')).toBe('svc/claude-sonnet-4-5');
    const catalog = buildCatalog(parseCatalogText(`${provider('http://127.0.0.1:1')}models:\n${model('a', '    aliases: [alpha-2025, alpha-latest]\n')}`, 'catalog.yaml'), {});
    expect(catalog.aliases.get('alpha-2025')).toBe('svc/a');
    expect(catalog.aliases.get('alpha-latest')).toBe('svc/a');
  });
});

describe('aliases and catalog fallbacks through Chat Completions', () => {
  let double: OpenAiProviderDouble;
  let gateway: EmbeddedGateway;
  let dataDir: string;
  let client: OpenAI;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'k' });
    dataDir = mkdtempSync(join(tmpdir(), 'switchboard-aliases-'));
    const catalog = `${provider(double.url)}models:\n${model('primary', '    aliases: [vendor-model-2025]\n    fallbacks: [svc/backup, other-name]\n')}${model('backup')}${model('third', '    aliases: [other-name]\n')}`;
    const environment = testEnvironment({ openAiUrl: double.url }, dataDir);
    writeFileSync(environment.SWITCHBOARD_CATALOG!, catalog);
    gateway = await startEmbeddedGateway({ environment });
    const created = await fetch(`${gateway.url}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${testAdminToken}` }, body: JSON.stringify({ name: 'aliases' }) });
    client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: ((await created.json()) as { key: string }).key, maxRetries: 0 });
  });

  afterAll(async () => {
    await gateway?.close();
    await double?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  beforeEach(() => double.reset());

  it('serves a request that names a model by its alias with that model', async () => {
    double.script('primary', { kind: 'text', text: 'from primary' });
    const completion = await client.chat.completions.create({ model: 'vendor-model-2025', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0]!.message.content).toBe('from primary');
    expect(completion.model).toBe('svc/primary');
    expect(double.requests.map((request) => request.model)).toEqual(['primary']);
  });

  it('falls back along the catalog fallbacks (ids and aliases) when the request names none', async () => {
    double.script('primary', { kind: 'error', status: 503 });
    double.script('backup', { kind: 'error', status: 429 });
    double.script('third', { kind: 'text', text: 'from third' });
    const completion = await client.chat.completions.create({ model: 'svc/primary', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.model).toBe('svc/third');
    expect(double.requests.map((request) => request.model)).toEqual(['primary', 'backup', 'third']);
  });

  it('uses the request\'s own fallbacks instead of the catalog\'s', async () => {
    double.script('primary', { kind: 'error', status: 503 });
    double.script('third', { kind: 'text', text: 'chosen by the request' });
    const completion = await client.chat.completions.create({ model: 'svc/primary', messages: [{ role: 'user', content: 'hi' }], fallbacks: ['svc/third'] } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(completion.choices[0]!.message.content).toBe('chosen by the request');
    expect(double.requests.map((request) => request.model)).toEqual(['primary', 'third']);
  });

  it('answers 400 for a name that is neither an id nor an alias', async () => {
    const error = await client.chat.completions.create({ model: 'gpt-unknown', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/svc\/<model name>, or one of the catalog's aliases/);
  });
});
