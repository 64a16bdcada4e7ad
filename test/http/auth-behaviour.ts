import { describe, expect, it } from 'vitest';
import { adminRequest, chat, createKey, hello } from '../support/api-client.js';
import type { GatewayContext } from './gateway-context.js';

async function expectInvalidKey(response: Response): Promise<void> {
  expect(response.status).toBe(401);
  const body = await response.json();
  expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
  expect(body.error.message).toMatch(/incorrect api key/i);
}

export function describeAuthentication(context: GatewayContext): void {
  describe('authentication', () => {
    const request = { model: 'svc/alpha', messages: hello };
    const post = (headers: Record<string, string>) =>
      fetch(`${context.deployment.url()}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(request) });

    it('refuses a missing Authorization header', async () => {
      await expectInvalidKey(await post({}));
    });

    it.each([
      ['a Basic scheme', (key: string) => `Basic ${key}`],
      ['no scheme', (key: string) => key],
      ['an empty bearer', () => 'Bearer '],
      ['a key without the sk-service- prefix', (key: string) => `Bearer ${key.replace('sk-service-', 'sk-')}`],
      ['a key with a wrong secret', (key: string) => `Bearer ${key.slice(0, -4)}AAAA`],
      ['an unknown key of the right shape', () => 'Bearer sk-service-AAAAAAAAAAAA-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB'],
      ['a truncated key', (key: string) => `Bearer ${key.slice(0, -1)}`],
    ])('refuses %s', async (_name, header) => {
      await expectInvalidKey(await post({ authorization: header(context.key.key) }));
      expect(context.double.requests).toHaveLength(0);
    });

    it('guards GET /v1/models the same way', async () => {
      await expectInvalidKey(await fetch(`${context.deployment.url()}/v1/models`));
      await expectInvalidKey(await fetch(`${context.deployment.url()}/v1/models`, { headers: { authorization: 'Bearer sk-service-nope' } }));
    });

    it('supports rotation: two keys valid at once, then the old one revoked fails at once', async () => {
      const oldKey = await createKey(context.deployment, { name: 'rotation old' });
      const newKey = await createKey(context.deployment, { name: 'rotation new' });
      expect((await chat(context.deployment, oldKey.key, request)).status).toBe(200);
      expect((await chat(context.deployment, newKey.key, request)).status).toBe(200);
      const revoked = await adminRequest(context.deployment, 'DELETE', `/admin/v1/keys/${oldKey.id}`);
      expect(revoked.status).toBe(200);
      expect(revoked.body.revoked_at).toBeTruthy();
      // The very next request, on every ingress instance, fails: no grace period.
      for (const _ of context.deployment.urls) await expectInvalidKey(await chat(context.deployment, oldKey.key, request));
      expect((await chat(context.deployment, newKey.key, request)).status).toBe(200);
    });

    it('never returns a secret from the admin API after creation', async () => {
      const created = await createKey(context.deployment, { name: 'secret check' });
      expect(created.key).toMatch(/^sk-service-[A-Za-z0-9]{12}-[A-Za-z0-9]{32}$/);
      expect(created.key_hint.endsWith(created.key.slice(-4))).toBe(true);
      const listed = await adminRequest(context.deployment, 'GET', '/admin/v1/keys');
      expect(JSON.stringify(listed.body)).not.toContain(created.key);
      const one = await adminRequest(context.deployment, 'GET', `/admin/v1/keys/${created.id}`);
      expect(one.body.key).toBeUndefined();
      expect(one.body.name).toBe('secret check');
    });

    it('refuses the admin API without the admin token', async () => {
      const response = await fetch(`${context.deployment.url()}/admin/v1/keys`, { headers: { authorization: `Bearer ${context.key.key}` } });
      expect(response.status).toBe(401);
    });
  });

  describe('GET /v1/models', () => {
    it('lists the catalog in the OpenAI shape with context length and per-token prices', async () => {
      const response = await fetch(`${context.deployment.url()}/v1/models`, { headers: { authorization: `Bearer ${context.key.key}` } });
      expect(response.status).toBe(200);
      const body = await response.json();
      expect(body.object).toBe('list');
      const alpha = body.data.find((model: { id: string }) => model.id === 'svc/alpha');
      expect(alpha).toMatchObject({ id: 'svc/alpha', object: 'model', owned_by: 'double', context_length: 32768, pricing: { prompt: '0.000001', completion: '0.000002' } });
      expect(Number.isInteger(alpha.created)).toBe(true);
      expect(body.data.find((model: { id: string }) => model.id === 'svc/nokey').provider_configured).toBe(false);
    });
  });
}
