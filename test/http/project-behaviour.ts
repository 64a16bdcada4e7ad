import { beforeAll, describe, expect, it } from 'vitest';
import { parseChatRequest } from '../../src/ingress/surfaces/chat-completions/chat-request-schema.js';
import { chatToInternal } from '../../src/ingress/surfaces/chat-completions/chat-to-internal.js';
import { costNanos } from '../../src/shared/pricing.js';
import { countPromptTokens, prepareTokenCounter } from '../../src/shared/token-counter.js';
import { adminRequest, chat, createKey, eventually, hello, ledgerView } from '../support/api-client.js';
import type { DeploymentKind } from '../support/gateway-harness.js';
import { testPrices } from '../support/test-catalog.js';
import { useGateway } from './gateway-context.js';

// Projects through the public interface: the admin API, and a request that must fit both its key's
// and its project's limits, reserved atomically at both levels (the budget race runs through both
// ingress instances when scaled out: deployment.url() alternates).

const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

/** A request whose worst case (prompt + max_tokens at alpha's prices) is exactly `reserve` nano-USD. */
function alphaRequest(maxTokens: number) {
  const body = { model: 'svc/alpha', messages: hello, max_tokens: maxTokens };
  const prompt = countPromptTokens(chatToInternal(parseChatRequest(body)));
  const [promptPrice, completionPrice] = testPrices.alpha!;
  return { body, prompt, reserve: costNanos({ promptUsdPerMillion: promptPrice, completionUsdPerMillion: completionPrice }, prompt, maxTokens) };
}

export function describeProjects(kind: DeploymentKind): void {
  const context = useGateway(kind);
  beforeAll(async () => {
    await prepareTokenCounter();
  });

  async function createProject(fields: Record<string, unknown>): Promise<Record<string, any>> {
    const { status, body } = await adminRequest(context.deployment, 'POST', '/admin/v1/projects', fields);
    expect(status, JSON.stringify(body)).toBe(201);
    return body;
  }

  describe('projects', () => {
    it('are created, listed, read, patched and deleted through the admin API; keys join one by project_id', async () => {
      const project = await createProject({ name: 'team a', budget_usd: 5, budget_period: 'monthly', rpm: 100, tpm: 10_000 });
      expect(project).toMatchObject({ object: 'project', name: 'team a', budget_usd: 5, budget_period: 'monthly', rpm: 100, tpm: 10_000, spent_usd: 0, alerts: [] });
      expect(project.id).toMatch(/^proj_/);
      const listed = await adminRequest(context.deployment, 'GET', '/admin/v1/projects');
      expect(listed.body.data.map((p: { id: string }) => p.id)).toContain(project.id);
      const patched = await adminRequest(context.deployment, 'PATCH', `/admin/v1/projects/${project.id}`, { budget_usd: null, rpm: null });
      expect(patched.body).toMatchObject({ budget_usd: null, rpm: null, tpm: 10_000 });
      const key = await createKey(context.deployment, { name: 'member', project_id: project.id });
      expect(key.project_id).toBe(project.id);
      const unknown = await adminRequest(context.deployment, 'POST', '/admin/v1/keys', { name: 'orphan', project_id: 'proj_missing' });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.param).toBe('project_id');
      expect((await adminRequest(context.deployment, 'DELETE', `/admin/v1/projects/${project.id}`)).body).toMatchObject({ id: project.id, deleted: true });
      expect((await adminRequest(context.deployment, 'GET', `/admin/v1/projects/${project.id}`)).status).toBe(404);
      expect((await adminRequest(context.deployment, 'GET', `/admin/v1/keys/${key.id}`)).body.project_id).toBeNull();
      expect((await adminRequest(context.deployment, 'POST', '/admin/v1/projects', { name: 'x', budget_period: 'yearly' })).status).toBe(400);
    });

    it("lets exactly the 10 requests that fit a project's budget succeed when 200 race over several keys and both ingresses", async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      // Each answer costs exactly its reservation, so exactly 10 fit whatever the interleaving.
      context.double.script('alpha', { kind: 'text', text: 'ten', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const project = await createProject({ name: 'race', budget_usd: (10 * reserve) / 1e9 });
      // Each key alone could afford 100 requests: only the project's budget binds.
      const keys = await Promise.all(Array.from({ length: 4 }, (_, i) => createKey(context.deployment, { name: `race ${i}`, project_id: project.id, budget_usd: (100 * reserve) / 1e9 })));
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => chat(context.deployment, keys[i % keys.length]!.key, body)));
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(10);
      expect(statuses.filter((status) => status !== 200).every((status) => status === 402)).toBe(true);
      const refusal = await answers.find((answer) => answer.status === 402)!.json();
      expect(refusal.error).toMatchObject({ code: 'budget_exceeded', type: 'insufficient_quota' });
      expect(refusal.error.message).toContain("project 'race'");
      expect(context.double.requests).toHaveLength(10);
      const costs = await eventually(async () => {
        const all = await Promise.all(keys.map(async (key) => (await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${key.id}&limit=1000`)).body.data.map(ledgerView)));
        const entries = all.flat();
        expect(entries).toHaveLength(10);
        return entries.map((entry) => entry.costNanos);
      }, 5000);
      expect(sum(costs)).toBe(10 * reserve);
      const after = await adminRequest(context.deployment, 'GET', `/admin/v1/projects/${project.id}`);
      expect(Math.round(after.body.spent_usd * 1e9)).toBe(10 * reserve);
      // A key outside the project is not held back by it.
      const outsider = await createKey(context.deployment, { name: 'outsider' });
      expect((await chat(context.deployment, outsider.key, body)).status).toBe(200);
    }, 60_000);

    it("applies the project's rate limit over all its keys, as 429 naming the project", async () => {
      const project = await createProject({ name: 'slow lane', rpm: 2 });
      const [first, second] = await Promise.all([0, 1].map((i) => createKey(context.deployment, { name: `lane ${i}`, project_id: project.id })));
      context.double.script('alpha', { kind: 'text', text: 'ok' });
      expect((await chat(context.deployment, first!.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      expect((await chat(context.deployment, second!.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      const refused = await chat(context.deployment, first!.key, { model: 'svc/alpha', messages: hello });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect((await refused.json()).error.message).toContain("project 'slow lane'");
      // Lifting the limit applies on the next request, on every ingress.
      await adminRequest(context.deployment, 'PATCH', `/admin/v1/projects/${project.id}`, { rpm: null });
      for (const _ of context.deployment.urls) expect((await chat(context.deployment, second!.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    });
  });
}
