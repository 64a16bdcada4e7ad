import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { adminRequest, chat, createKey, eventually, hello } from '../support/api-client.js';
import { startDeployment, type DeploymentKind } from '../support/gateway-harness.js';
import { useGateway } from './gateway-context.js';

// Key governance through the public interface: allow-lists on every endpoint (chat, messages,
// responses, embeddings, models) with the official clients, and key expiry. Run against both
// deployments (test/governance-embedded.test.ts, test/governance-scaled.test.ts).

/** svc/gamma answers to the alias house-gamma; svc/alpha falls back to svc/beta by catalog. */
export function useGovernanceGateway(kind: DeploymentKind) {
  return useGateway((openAiUrl) => startDeployment(kind, { openAiUrl, aliases: { gamma: ['house-gamma'] }, modelFallbacks: { alpha: ['svc/beta'] } }));
}

export function describeKeyGovernance(kind: DeploymentKind): void {
  const context = useGovernanceGateway(kind);
  const openai = (key: string) => new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: key, maxRetries: 0 });
  const anthropic = (key: string) => new Anthropic({ baseURL: context.deployment.url(), apiKey: key, maxRetries: 0 });

  async function expectNotAllowed(call: Promise<unknown>, model: string): Promise<void> {
    const error = await call.then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(403);
    expect(apiError.code).toBe('model_not_allowed');
    expect(apiError.message).toContain(model);
  }

  describe('allowed_models', () => {
    it('is a key field in the admin API, patchable and clearable', async () => {
      const key = await createKey(context.deployment, { name: 'allow-list', allowed_models: ['svc/alpha', 'svc/embed-*'] });
      expect(key.allowed_models).toEqual(['svc/alpha', 'svc/embed-*']);
      const patched = await adminRequest(context.deployment, 'PATCH', `/admin/v1/keys/${key.id}`, { allowed_models: null });
      expect(patched.body.allowed_models).toBeNull();
      const bad = await adminRequest(context.deployment, 'PATCH', `/admin/v1/keys/${key.id}`, { allowed_models: [] });
      expect(bad.status).toBe(400);
    });

    it('refuses other models on chat completions with 403 model_not_allowed, without calling a provider', async () => {
      const key = await createKey(context.deployment, { name: 'chat allow-list', allowed_models: ['svc/alpha'] });
      context.double.script('alpha', { kind: 'text', text: 'allowed' });
      const answer = await openai(key.key).chat.completions.create({ model: 'svc/alpha', messages: [{ role: 'user', content: 'hi' }] });
      expect(answer.choices[0]!.message.content).toBe('allowed');
      await expectNotAllowed(openai(key.key).chat.completions.create({ model: 'svc/gamma', messages: [{ role: 'user', content: 'hi' }] }), 'svc/gamma');
      // Streaming is refused before the stream opens, in the same shape.
      await expectNotAllowed(openai(key.key).chat.completions.create({ model: 'svc/gamma', messages: [{ role: 'user', content: 'hi' }], stream: true }), 'svc/gamma');
      expect(context.double.requests).toHaveLength(1);
    });

    it('applies glob patterns, and checks aliases by the model they resolve to', async () => {
      const key = await createKey(context.deployment, { name: 'glob allow-list', allowed_models: ['svc/g*'] });
      context.double.script('gamma', { kind: 'text', text: 'gamma here' });
      const viaAlias = await openai(key.key).chat.completions.create({ model: 'house-gamma', messages: [{ role: 'user', content: 'hi' }] });
      expect(viaAlias.choices[0]!.message.content).toBe('gamma here');
      await expectNotAllowed(openai(key.key).chat.completions.create({ model: 'svc/delta', messages: [{ role: 'user', content: 'hi' }] }), 'svc/delta');
      const onlyAlpha = await createKey(context.deployment, { name: 'alias refused', allowed_models: ['svc/alpha'] });
      await expectNotAllowed(openai(onlyAlpha.key).chat.completions.create({ model: 'house-gamma', messages: [{ role: 'user', content: 'hi' }] }), 'svc/gamma');
    });

    it('applies to fallbacks: a named one is refused, a catalog one outside the list is skipped', async () => {
      const key = await createKey(context.deployment, { name: 'fallback allow-list', allowed_models: ['svc/alpha', 'svc/gamma'] });
      const named = await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello, fallbacks: ['svc/delta'] });
      expect(named.status).toBe(403);
      expect((await named.json()).error).toMatchObject({ code: 'model_not_allowed', param: 'fallbacks[0]' });
      // svc/alpha falls back to svc/beta by catalog; beta is not allowed, so an alpha failure is final.
      context.double.script('alpha', { kind: 'error', status: 500 });
      context.double.script('beta', { kind: 'text', text: 'must not be used' });
      const failed = await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello });
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(context.double.requests.map((request) => request.body.model)).toEqual(['alpha']);
    });

    it('refuses on the Messages surface in the Anthropic error shape', async () => {
      const key = await createKey(context.deployment, { name: 'messages allow-list', allowed_models: ['svc/alpha'] });
      context.double.script('alpha', { kind: 'text', text: 'from alpha' });
      const ok = await anthropic(key.key).messages.create({ model: 'svc/alpha', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
      expect(ok.content).toEqual([{ type: 'text', text: 'from alpha' }]);
      const error = await anthropic(key.key).messages.create({ model: 'svc/gamma', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }).then(() => undefined, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect((error as InstanceType<typeof Anthropic.PermissionDeniedError>).error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
      const counted = await anthropic(key.key).messages.countTokens({ model: 'svc/gamma', messages: [{ role: 'user', content: 'hi' }] }).then(() => undefined, (caught: unknown) => caught);
      expect(counted).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect((await anthropic(key.key).messages.countTokens({ model: 'svc/alpha', messages: [{ role: 'user', content: 'hi' }] })).input_tokens).toBeGreaterThan(0);
    });

    it('refuses on the Responses surface', async () => {
      const key = await createKey(context.deployment, { name: 'responses allow-list', allowed_models: ['svc/alpha'] });
      context.double.script('alpha', { kind: 'text', text: 'responses ok' });
      const ok = await openai(key.key).responses.create({ model: 'svc/alpha', input: 'hi', store: false });
      expect(ok.output_text).toBe('responses ok');
      await expectNotAllowed(openai(key.key).responses.create({ model: 'svc/gamma', input: 'hi', store: false }), 'svc/gamma');
    });

    it('refuses on embeddings', async () => {
      const key = await createKey(context.deployment, { name: 'embeddings allow-list', allowed_models: ['svc/alpha'] });
      await expectNotAllowed(openai(key.key).embeddings.create({ model: 'svc/embed-alpha', input: 'text' }), 'svc/embed-alpha');
      const embedder = await createKey(context.deployment, { name: 'embedder', allowed_models: ['svc/embed-*'] });
      const ok = await openai(embedder.key).embeddings.create({ model: 'svc/embed-alpha', input: 'text', encoding_format: 'float' });
      expect(ok.data).toHaveLength(1);
    });

    it('lists only the models the key may use on /v1/models, and refuses the others by id', async () => {
      const key = await createKey(context.deployment, { name: 'models allow-list', allowed_models: ['svc/alpha', 'svc/embed-*'] });
      const ids: string[] = [];
      for await (const model of openai(key.key).models.list()) ids.push(model.id);
      expect(ids.sort()).toEqual(ids.filter((id) => id === 'svc/alpha' || id.startsWith('svc/embed-')).sort());
      expect(ids).toContain('svc/alpha');
      expect(ids).toContain('svc/embed-alpha');
      expect(ids).not.toContain('svc/beta');
      expect((await openai(key.key).models.retrieve('svc/alpha')).id).toBe('svc/alpha');
      await expectNotAllowed(openai(key.key).models.retrieve('svc/beta'), 'svc/beta');
      const all: string[] = [];
      for await (const model of openai(context.key.key).models.list()) all.push(model.id);
      expect(all).toContain('svc/beta');
    });
  });

  describe('expires_at', () => {
    it('answers 401 like a revoked key once the time has passed, on every ingress', async () => {
      const expiresAt = new Date(Date.now() + 1500).toISOString();
      const key = await createKey(context.deployment, { name: 'expiring', expires_at: expiresAt });
      expect(key).toMatchObject({ expires_at: expiresAt, status: 'active' });
      context.double.script('alpha', { kind: 'text', text: 'still valid' });
      expect((await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 50));
      for (const _ of context.deployment.urls) {
        const refused = await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello });
        expect(refused.status).toBe(401);
        expect((await refused.json()).error.code).toBe('invalid_api_key');
      }
      const models = await fetch(`${context.deployment.url()}/v1/models`, { headers: { authorization: `Bearer ${key.key}` } });
      expect(models.status).toBe(401);
      const record = await adminRequest(context.deployment, 'GET', `/admin/v1/keys/${key.id}`);
      expect(record.body.status).toBe('expired');
    });

    it('can be set in the past (an immediate expiry) and cleared again', async () => {
      const key = await createKey(context.deployment, { name: 'expired at once' });
      const patched = await adminRequest(context.deployment, 'PATCH', `/admin/v1/keys/${key.id}`, { expires_at: '2020-01-01T00:00:00Z' });
      expect(patched.body).toMatchObject({ expires_at: '2020-01-01T00:00:00.000Z', status: 'expired' });
      expect((await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(401);
      await adminRequest(context.deployment, 'PATCH', `/admin/v1/keys/${key.id}`, { expires_at: null });
      context.double.script('alpha', { kind: 'text', text: 'back' });
      expect((await chat(context.deployment, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      const invalid = await adminRequest(context.deployment, 'PATCH', `/admin/v1/keys/${key.id}`, { expires_at: 'tomorrow' });
      expect(invalid.status).toBe(400);
    });
  });

  describe('refused traffic', () => {
    async function refusedOf(query: string): Promise<Array<Record<string, unknown>>> {
      const { status, body } = await adminRequest(context.deployment, 'GET', `/admin/v1/usage/refused?${query}`);
      expect(status, JSON.stringify(body)).toBe(200);
      return body.data;
    }

    it('counts 401 (by the key named), 402, 403 and 429 per key and model, without ledger rows', async () => {
      context.double.script('alpha', { kind: 'text', text: 'ok' });
      const limited = await createKey(context.deployment, { name: 'refused rpm', rpm: 1 });
      expect((await chat(context.deployment, limited.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await chat(context.deployment, limited.key, { model: 'svc/alpha', messages: hello })).status).toBe(429);
      const broke = await createKey(context.deployment, { name: 'refused budget', budget_usd: 0 });
      for (let i = 0; i < 2; i++) expect((await chat(context.deployment, broke.key, { model: 'svc/beta', messages: hello, max_tokens: 5 })).status).toBe(402);
      const fenced = await createKey(context.deployment, { name: 'refused model', allowed_models: ['svc/alpha'] });
      expect((await chat(context.deployment, fenced.key, { model: 'svc/beta', messages: hello })).status).toBe(403);
      const embedder = await openai(fenced.key).embeddings.create({ model: 'svc/embed-alpha', input: 'x' }).then(() => 200, (error: { status: number }) => error.status);
      expect(embedder).toBe(403);
      const revoked = await createKey(context.deployment, { name: 'refused revoked' });
      await adminRequest(context.deployment, 'DELETE', `/admin/v1/keys/${revoked.id}`);
      for (let i = 0; i < 2; i++) expect((await chat(context.deployment, revoked.key, { model: 'svc/alpha', messages: hello })).status).toBe(401);
      expect((await fetch(`${context.deployment.url()}/v1/models`, { headers: { authorization: `Bearer ${revoked.key}` } })).status).toBe(401);

      // Each ingress adds its counts to the store within a second.
      await eventually(async () => {
        expect(await refusedOf(`key_id=${limited.id}`)).toEqual([{ key_id: limited.id, model: 'svc/alpha', status: 429, count: 3 }]);
        expect(await refusedOf(`key_id=${broke.id}`)).toEqual([{ key_id: broke.id, model: 'svc/beta', status: 402, count: 2 }]);
        expect(await refusedOf(`key_id=${fenced.id}`)).toEqual([{ key_id: fenced.id, model: 'svc/beta', status: 403, count: 1 }, { key_id: fenced.id, model: 'svc/embed-alpha', status: 403, count: 1 }]);
        expect(await refusedOf(`key_id=${revoked.id}`)).toEqual([{ key_id: revoked.id, model: null, status: 401, count: 3 }]);
      }, 5000);
      const bySince = await refusedOf(`key_id=${limited.id}&since=${new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10)}`);
      expect(bySince).toEqual([]);
      // Only the one request that ran is in the ledger.
      const ledger = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${limited.id}`);
      expect(ledger.body.data).toHaveLength(1);
      for (const key of [broke, fenced, revoked]) expect((await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${key.id}`)).body.data).toEqual([]);
    });
  });
}
