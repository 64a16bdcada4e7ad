import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { createKey, eventually } from './support/api-client.js';
import { testEnvironment } from './support/gateway-harness.js';

// What stays in the store: responses are kept for SWITCHBOARD_RESPONSE_RETENTION_DAYS and then
// purged (here about 1.7 seconds, days may be fractional, with a purge every 200 ms), and a
// background request that could not be queued leaves nothing behind.

function storedResponses(environment: Record<string, string>) {
  const setup = {} as { double: OpenAiProviderDouble; gateway: EmbeddedGateway; dataDir: string; client: OpenAI; rows: () => number };
  beforeAll(async () => {
    setup.double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    setup.dataDir = mkdtempSync(join(tmpdir(), 'switchboard-retention-'));
    const gateway = await startEmbeddedGateway({ environment: testEnvironment({ openAiUrl: setup.double.url, environment }, setup.dataDir) });
    setup.gateway = gateway;
    const key = await createKey({ kind: 'embedded', urls: [gateway.url], adminToken: gateway.adminToken, url: () => gateway.url, close: async () => undefined });
    setup.client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key.key, maxRetries: 0 });
  }, 30_000);
  afterAll(async () => {
    await setup.gateway?.close();
    await setup.double?.close();
    rmSync(setup.dataDir, { recursive: true, force: true });
  });
  setup.rows = () => {
    const db = new Database(join(setup.dataDir, 'switchboard.db'), { readonly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM stored_responses').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  return setup;
}

describe('stored response retention', () => {
  const setup = storedResponses({ SWITCHBOARD_RESPONSE_RETENTION_DAYS: '0.00002', SWITCHBOARD_RESPONSE_PURGE_INTERVAL_MS: '200' });

  it('keeps a response for the retention period, then purges it', async () => {
    const { client, rows: storedRows } = setup;
    const response = await client.responses.create({ model: 'svc/alpha', input: 'Keep me briefly' });
    expect((await client.responses.retrieve(response.id)).id).toBe(response.id);
    expect(storedRows()).toBe(1);
    await eventually(() => expect(storedRows()).toBe(0), 5000);
    await expect(client.responses.retrieve(response.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.create({ model: 'svc/alpha', input: 'Continue', previous_response_id: response.id })).rejects.toMatchObject({ status: 404 });
  });
});

describe('a background request that cannot be queued', () => {
  // No room in the queue: every job is refused with 503 overloaded.
  const setup = storedResponses({ SWITCHBOARD_MAX_QUEUED_JOBS: '0' });

  it('is refused and leaves no stored response behind', async () => {
    await expect(setup.client.responses.create({ model: 'svc/alpha', input: 'Hi', background: true })).rejects.toMatchObject({ status: 503, code: 'overloaded' });
    await eventually(() => expect(setup.rows()).toBe(0));
  });
});
