import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseChatRequest } from '../../src/ingress/surfaces/chat-completions/chat-request-schema.js';
import { chatToInternal } from '../../src/ingress/surfaces/chat-completions/chat-to-internal.js';
import { costNanos } from '../../src/shared/pricing.js';
import { countPromptTokens, prepareTokenCounter } from '../../src/shared/token-counter.js';
import { adminRequest, chat, createKey, eventually, hello } from '../support/api-client.js';
import type { DeploymentKind } from '../support/gateway-harness.js';
import { testPrices } from '../support/test-catalog.js';
import { useGateway } from './gateway-context.js';

// Budget alerts through the public interface, delivered to a webhook receiver in this test: once
// per threshold and period, signed with HMAC-SHA256 over the body, retried when the receiver fails,
// and recorded in GET /admin/v1/alerts.

const webhookSecret = 'test-webhook-secret-3f1a';

interface Received {
  path: string;
  body: string;
  signature: string;
}

/** What a receiver does: recompute the HMAC over the raw body and compare in constant time. */
function signatureValid(secret: string, body: string, header: string): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

function alphaRequest(maxTokens: number) {
  const body = { model: 'svc/alpha', messages: hello, max_tokens: maxTokens };
  const prompt = countPromptTokens(chatToInternal(parseChatRequest(body)));
  const [promptPrice, completionPrice] = testPrices.alpha!;
  return { body, prompt, reserve: costNanos({ promptUsdPerMillion: promptPrice, completionUsdPerMillion: completionPrice }, prompt, maxTokens) };
}

export function describeAlerts(kind: DeploymentKind): void {
  const context = useGateway(kind, { SWITCHBOARD_WEBHOOK_SECRET: webhookSecret, SWITCHBOARD_ALERT_RETRY_MS: '100' });
  const received: Received[] = [];
  /** Paths whose next call answers 500 (once each). */
  const failOnce = new Set<string>();
  let receiver: Server;
  let receiverUrl = '';

  beforeAll(async () => {
    await prepareTokenCounter();
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '';
        if (failOnce.delete(path)) {
          response.writeHead(500).end();
          return;
        }
        received.push({ path, body: Buffer.concat(chunks).toString('utf8'), signature: String(request.headers['x-switchboard-signature'] ?? '') });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => receiver?.close(resolve));
  });

  const at = (path: string) => received.filter((entry) => entry.path === path);

  describe('budget alerts', () => {
    it('fires each threshold once per period as a signed webhook, retried when the receiver fails', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const path = '/key-alerts';
      failOnce.add(path);
      const alerts = [50, 80, 100].map((threshold) => ({ threshold_percent: threshold, webhook_url: `${receiverUrl}${path}` }));
      const key = await createKey(context.deployment, { name: 'alerting', budget_usd: (4 * reserve) / 1e9, alerts });
      expect(key.alerts).toEqual(alerts);
      // Two requests: 50 % of the budget spent.
      for (let i = 0; i < 2; i++) expect((await chat(context.deployment, key.key, body)).status).toBe(200);
      const first = await eventually(() => {
        expect(at(path)).toHaveLength(1);
        return at(path)[0]!;
      }, 5000);
      const payload = JSON.parse(first.body);
      expect(payload).toMatchObject({ type: 'budget.threshold_reached', key_id: key.id, name: 'alerting', threshold_percent: 50, budget_period: 'none' });
      expect(Math.round(payload.spent_usd * 1e9)).toBe(2 * reserve);
      expect(signatureValid(webhookSecret, first.body, first.signature)).toBe(true);
      // A forged or tampered delivery is detectable.
      expect(signatureValid('another-secret', first.body, first.signature)).toBe(false);
      expect(signatureValid(webhookSecret, first.body.replace('"threshold_percent":50', '"threshold_percent":5'), first.signature)).toBe(false);
      // The first attempt got a 500; the delivery was retried and recorded.
      // The sender records the delivery after the receiver answered: wait for the record.
      await eventually(async () => {
        const deliveries = await adminRequest(context.deployment, 'GET', `/admin/v1/alerts?subject_id=${key.id}`);
        expect(deliveries.body.data).toEqual([expect.objectContaining({ subject_kind: 'key', threshold_percent: 50, status: 'delivered', attempts: 2, last_status: 204 })]);
      }, 5000);
      // Third request (75 %): nothing new. Fourth and concurrent extras (100 %): 80 and 100 once each.
      expect((await chat(context.deployment, key.key, body)).status).toBe(200);
      const rest = await Promise.all([0, 1, 2].map(() => chat(context.deployment, key.key, body)));
      expect(rest.map((answer) => answer.status).sort()).toEqual([200, 402, 402]);
      await eventually(() => expect(at(path).map((entry) => JSON.parse(entry.body).threshold_percent).sort()).toEqual([100, 50, 80]), 5000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(at(path)).toHaveLength(3);
      for (const entry of at(path)) expect(signatureValid(webhookSecret, entry.body, entry.signature)).toBe(true);
      const all = await adminRequest(context.deployment, 'GET', `/admin/v1/alerts?subject_id=${key.id}`);
      expect(all.body.data.map((delivery: { threshold_percent: number }) => delivery.threshold_percent).sort()).toEqual([100, 50, 80]);
    }, 30_000);

    it("fires a project's thresholds from the spend of all its keys", async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const path = '/project-alerts';
      const created = await adminRequest(context.deployment, 'POST', '/admin/v1/projects', { name: 'alerting project', budget_usd: (4 * reserve) / 1e9, alerts: [{ threshold_percent: 50, webhook_url: `${receiverUrl}${path}` }] });
      expect(created.status).toBe(201);
      const keys = await Promise.all([0, 1].map((i) => createKey(context.deployment, { name: `project alerting ${i}`, project_id: created.body.id })));
      expect((await chat(context.deployment, keys[0]!.key, body)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(at(path)).toHaveLength(0);
      expect((await chat(context.deployment, keys[1]!.key, body)).status).toBe(200);
      expect((await chat(context.deployment, keys[0]!.key, body)).status).toBe(200);
      await eventually(() => expect(at(path)).toHaveLength(1), 5000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(at(path)).toHaveLength(1);
      expect(JSON.parse(at(path)[0]!.body)).toMatchObject({ project_id: created.body.id, threshold_percent: 50 });
      expect(signatureValid(webhookSecret, at(path)[0]!.body, at(path)[0]!.signature)).toBe(true);
    }, 30_000);

    it('refuses alerts that are not http(s) URLs or sensible thresholds', async () => {
      expect((await adminRequest(context.deployment, 'POST', '/admin/v1/keys', { name: 'bad alert', alerts: [{ threshold_percent: 50, webhook_url: 'file:///etc/passwd' }] })).status).toBe(400);
      expect((await adminRequest(context.deployment, 'POST', '/admin/v1/keys', { name: 'bad alert', alerts: [{ threshold_percent: 0, webhook_url: `${receiverUrl}/x` }] })).status).toBe(400);
    });
  });
}
