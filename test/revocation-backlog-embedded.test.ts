import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { adminRequest, chat, createKey, eventually, hello, ledgerView } from './support/api-client.js';
import { startEmbeddedDeployment, type TestDeployment } from './support/gateway-harness.js';

// The embedded default has a queue too (jobs wait for a free worker slot): a key revoked while
// its jobs wait there must not have them reach a provider. (Scaled out: scaled-out-money.test.ts.)

describe('embedded: revoking a key with a backlog', () => {
  let double: OpenAiProviderDouble;
  let deployment: TestDeployment;

  beforeAll(async () => {
    double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    deployment = await startEmbeddedDeployment({ openAiUrl: double.url, environment: { SWITCHBOARD_WORKER_CONCURRENCY: '3' } });
  });
  afterAll(async () => {
    await deployment?.close();
    await double?.close();
  });

  it('ends the queued jobs with 401 before they reach the provider; running ones finish', async () => {
    const key = await createKey(deployment, { name: 'revoked with a backlog', budget_usd: 100 });
    double.script('alpha', { kind: 'text', chunks: ['a ', 'b ', 'c ', 'd ', 'e '], chunkDelayMs: 150 });
    const answers = Array.from({ length: 12 }, () =>
      chat(deployment, key.key, { model: 'svc/alpha', messages: hello }).then(async (response) => ({ status: response.status, body: await response.json() })),
    );
    await eventually(() => expect(double.requests).toHaveLength(3), 5000);
    expect((await adminRequest(deployment, 'DELETE', `/admin/v1/keys/${key.id}`)).status).toBe(200);
    const revokedAt = Date.now();
    const results = await Promise.all(answers);
    expect(double.requests.filter((request) => request.receivedAt >= revokedAt)).toEqual([]);
    expect(results.filter((result) => result.status === 200)).toHaveLength(3);
    const refused = results.filter((result) => result.status === 401);
    expect(refused).toHaveLength(9);
    for (const result of refused) expect(result.body.error.code).toBe('invalid_api_key');
    // Only the three that ran are billed.
    const { body: ledger } = await adminRequest(deployment, 'GET', `/admin/v1/requests?key_id=${key.id}`);
    expect(ledger.data).toHaveLength(3);
    const { body: record } = await adminRequest(deployment, 'GET', `/admin/v1/keys/${key.id}`);
    expect(Math.round(record.spent_usd * 1e9)).toBe(ledger.data.map(ledgerView).reduce((sum: number, row: { costNanos: number }) => sum + row.costNanos, 0));
  });
});
