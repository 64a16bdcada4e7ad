import { describe, expect, it } from 'vitest';
import { chat, createKey, hello } from './support/api-client.js';
import { useGateway } from './http/gateway-context.js';
import { describeKeyGovernance } from './http/governance-behaviour.js';
import { describeAlerts } from './http/alerts-behaviour.js';
import { describeProjects } from './http/project-behaviour.js';

// Key governance (allow-lists, expiry) against the embedded default.
describe('key governance, embedded deployment', () => {
  describeKeyGovernance('embedded');
});

describe('projects, embedded deployment', () => {
  describeProjects('embedded');
});

describe('budget alerts, embedded deployment', () => {
  describeAlerts('embedded');
});

describe('key expiry with one worker slot, embedded deployment', () => {
  const context = useGateway('embedded', { SWITCHBOARD_WORKER_CONCURRENCY: '1' });

  it('refuses a queued job whose key expired while it waited, before it reaches a provider', async () => {
    context.double.script('alpha', { kind: 'text', chunks: ['slow', ' one'], chunkDelayMs: 600 });
    const runner = await createKey(context.deployment, { name: 'holds the worker' });
    const expiring = await createKey(context.deployment, { name: 'expires in the queue', expires_at: new Date(Date.now() + 400).toISOString() });
    const running = chat(context.deployment, runner.key, { model: 'svc/alpha', messages: hello, stream: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const queued = await chat(context.deployment, expiring.key, { model: 'svc/alpha', messages: hello });
    expect(queued.status).toBe(401);
    expect((await queued.json()).error.code).toBe('invalid_api_key');
    expect((await running).status).toBe(200);
    expect(context.double.requests).toHaveLength(1);
  });
});
