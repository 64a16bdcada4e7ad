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

// Stored responses are kept for SWITCHBOARD_RESPONSE_RETENTION_DAYS and then purged from the
// store. Here the retention is about 1.7 seconds (days may be fractional) and the purge runs
// every 200 ms.

describe('stored response retention', () => {
  let double: OpenAiProviderDouble;
  let gateway: EmbeddedGateway;
  let dataDir: string;
  let client: OpenAI;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    dataDir = mkdtempSync(join(tmpdir(), 'switchboard-retention-'));
    gateway = await startEmbeddedGateway({
      environment: testEnvironment({ openAiUrl: double.url, environment: { SWITCHBOARD_RESPONSE_RETENTION_DAYS: '0.00002', SWITCHBOARD_RESPONSE_PURGE_INTERVAL_MS: '200' } }, dataDir),
    });
    const key = await createKey({ kind: 'embedded', urls: [gateway.url], adminToken: gateway.adminToken, url: () => gateway.url, close: async () => undefined });
    client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key.key, maxRetries: 0 });
  }, 30_000);
  afterAll(async () => {
    await gateway?.close();
    await double?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const storedRows = () => {
    const db = new Database(join(dataDir, 'switchboard.db'), { readonly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM stored_responses').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  it('keeps a response for the retention period, then purges it', async () => {
    const response = await client.responses.create({ model: 'svc/alpha', input: 'Keep me briefly' });
    expect((await client.responses.retrieve(response.id)).id).toBe(response.id);
    expect(storedRows()).toBe(1);
    await eventually(() => expect(storedRows()).toBe(0), 5000);
    await expect(client.responses.retrieve(response.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.create({ model: 'svc/alpha', input: 'Continue', previous_response_id: response.id })).rejects.toMatchObject({ status: 404 });
  });
});
