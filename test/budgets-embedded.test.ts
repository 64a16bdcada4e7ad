import { describe, expect, it } from 'vitest';
import { chat, createKey, hello } from './support/api-client.js';
import { describeBudgetPeriods, describeBudgets } from './http/budget-behaviour.js';
import { useGateway } from './http/gateway-context.js';

// Budgets, rate limits, billing and the usage API against the embedded default (one process,
// in-memory counters, the embedded database file). The gateway runs in this process, so the
// budget-period tests can move its clock.
describe('embedded deployment: budgets, rate limits and usage', () => {
  const context = useGateway('embedded');
  describeBudgets(context);
  describeBudgetPeriods(context);
});

describe('embedded deployment with one worker slot', () => {
  const context = useGateway('embedded', { SWITCHBOARD_WORKER_CONCURRENCY: '1' });

  it('gives back the reservation and concurrency slot of a request cancelled while it waited for a worker', async () => {
    context.double.script('alpha', { kind: 'text', chunks: ['slow', ' one'], chunkDelayMs: 400 });
    const key = await createKey(context.deployment, { name: 'queued cancel', max_concurrent: 2, budget_usd: 1 });
    const running = chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello, stream: true, max_tokens: 10 });
    const controller = new AbortController();
    const queued = chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello, max_tokens: 10 }, { signal: controller.signal }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 150));
    controller.abort();
    await queued;
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The first request still runs; the cancelled one must not hold the second slot.
    const third = chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello, max_tokens: 10 });
    expect((await running).status).toBe(200);
    expect((await third).status).toBe(200);
    expect(context.double.requests.map((request) => request.model)).toEqual(['alpha', 'alpha']);
  });
});
