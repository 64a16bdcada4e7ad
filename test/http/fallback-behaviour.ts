import { describe, expect, it } from 'vitest';
import { parseSseText, readSse } from '../doubles/sse.js';
import { adminRequest, chat, createKey, eventually, hello, ledgerView } from '../support/api-client.js';
import type { GatewayContext } from './gateway-context.js';

// Fallbacks fire on rate limits, server errors, connection failures and time-outs, only before
// the first token; only the model that answered is billed.

async function ledgerFor(context: GatewayContext, keyId: string, count = 1): Promise<any[]> {
  return eventually(async () => {
    const { body } = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${keyId}`);
    expect(body.data.length).toBeGreaterThanOrEqual(count);
    return body.data.map(ledgerView);
  });
}

export function describeFallbacks(context: GatewayContext): void {
  describe('fallback chain', () => {
    it('moves to the next model on a 429 and bills only the model that answered', async () => {
      const key = await createKey(context.deployment, { name: 'fallback billing' });
      context.double.script('alpha', { kind: 'error', status: 429, retryAfter: '3' });
      context.double.script('beta', { kind: 'text', text: 'from beta', usage: { prompt_tokens: 1000, completion_tokens: 500 } });
      const response = await chat(context.deployment, key.key, { model: 'svc/alpha', fallbacks: ['svc/beta', 'svc/gamma'], messages: hello });
      expect(response.status).toBe(200);
      const body = await response.json();
      expect(body.model).toBe('svc/beta');
      expect(body.choices[0].message.content).toBe('from beta');
      expect(body.usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 });
      expect(context.double.requests.map((request) => request.model)).toEqual(['alpha', 'beta']);
      const [entry] = await ledgerFor(context, key.id);
      expect(entry).toMatchObject({ requestedModel: 'svc/alpha', servedModel: 'svc/beta', promptTokens: 1000, completionTokens: 500, status: 200, estimated: false });
      // beta costs $3 / $4 per million tokens: 1000 * 3e-6 + 500 * 4e-6 = $0.005.
      expect(entry.costNanos).toBe(5_000_000);
      expect(entry.attempts.map((attempt: { model: string; outcome: string }) => [attempt.model, attempt.outcome])).toEqual([
        ['svc/alpha', 'rate_limit'],
        ['svc/beta', 'success'],
      ]);
      const keyRecord = await adminRequest(context.deployment, 'GET', `/admin/v1/keys/${key.id}`);
      expect(keyRecord.body.spent_usd).toBeCloseTo(0.005, 12);
    });

    it.each([
      ['a 500', { kind: 'error', status: 500 }],
      ['a 503', { kind: 'error', status: 503 }],
      ['a connection dropped before any content', { kind: 'midstream_drop', chunksBeforeDrop: 0 }],
    ] as const)('moves on after %s (streaming)', async (_name, behaviour) => {
      context.double.script('alpha', behaviour as never);
      context.double.script('beta', { kind: 'text', chunks: ['fine'], usage: { prompt_tokens: 4, completion_tokens: 1 } });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello, stream: true });
      expect(response.status).toBe(200);
      const chunks = (await readSse(response)).events.slice(0, -1).map((event) => JSON.parse(event.data));
      expect(chunks.every((chunk) => chunk.model === 'svc/beta')).toBe(true);
      expect(chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')).toBe('fine');
    });

    it('moves on when the first token does not arrive in time', async () => {
      context.double.script('alpha', { kind: 'hang_after_headers' });
      context.double.script('beta', { kind: 'text', chunks: ['late but here'] });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello, stream: true });
      expect(response.status).toBe(200);
      const text = (await readSse(response)).events.slice(0, -1).map((event) => JSON.parse(event.data).choices[0]?.delta?.content ?? '').join('');
      expect(text).toBe('late but here');
    });

    it('does not fall back on a 400 from the provider', async () => {
      context.double.script('alpha', { kind: 'error', status: 400, type: 'invalid_request_error', code: 'unsupported_parameter', message: "Unsupported parameter: 'max_tokens'" });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello });
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_bad_request' });
      expect(body.error.message).toContain('max_tokens');
      expect(context.double.requests.map((request) => request.model)).toEqual(['alpha']);
    });

    it('answers 502 upstream_error listing every attempt when all fail with a server error last', async () => {
      context.double.script('alpha', { kind: 'error', status: 429 });
      context.double.script('beta', { kind: 'error', status: 500 });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello });
      expect(response.status).toBe(502);
      const body = await response.json();
      expect(body.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
      expect(body.error.message).toMatch(/svc\/alpha.*rate limited.*429.*svc\/beta.*server error.*500/);
    });

    it('answers 429 with retry-after when a rate limit was the last failure', async () => {
      context.double.script('alpha', { kind: 'error', status: 500 });
      context.double.script('beta', { kind: 'error', status: 429, retryAfter: '7' });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello });
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toBe('7');
      expect((await response.json()).error).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited' });
    });

    it('answers 504 upstream_timeout when the last target timed out', async () => {
      context.double.script('alpha', { kind: 'hang' });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, stream: true });
      expect(response.status).toBe(504);
      expect((await response.json()).error).toMatchObject({ type: 'server_error', code: 'upstream_timeout' });
    });

    it('tries every fallback in the given order', async () => {
      for (const model of ['alpha', 'beta', 'gamma', 'delta', 'epsilon']) context.double.script(model, { kind: 'error', status: 503 });
      context.double.script('zeta', { kind: 'text', text: 'last one' });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta', 'svc/gamma', 'svc/delta', 'svc/epsilon', 'svc/zeta'], messages: hello });
      expect((await response.json()).model).toBe('svc/zeta');
      expect(context.double.requests.map((request) => request.model)).toEqual(['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta']);
    });

    it('skips a model whose provider has no key, and says so when nothing else is left', async () => {
      context.double.script('alpha', { kind: 'text', text: 'configured' });
      const served = await chat(context.deployment, context.key.key, { model: 'svc/nokey', fallbacks: ['svc/alpha'], messages: hello });
      expect((await served.json()).model).toBe('svc/alpha');
      const alone = await chat(context.deployment, context.key.key, { model: 'svc/nokey', messages: hello });
      expect(alone.status).toBe(503);
      const body = await alone.json();
      expect(body.error.code).toBe('provider_not_configured');
      expect(body.error.message).toContain('SB_TEST_MISSING_KEY');
    });
  });

  describe('after the first token', () => {
    it('sends the error chunk and closes without [DONE] or a fallback when the upstream drops mid-stream', async () => {
      const key = await createKey(context.deployment, { name: 'midstream' });
      context.double.script('alpha', { kind: 'midstream_drop', chunksBeforeDrop: 2 });
      const response = await chat(context.deployment, key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello, stream: true });
      expect(response.status).toBe(200);
      const raw = await response.text();
      expect(raw).not.toContain('[DONE]');
      const chunks = parseSseText(raw).map((event) => JSON.parse(event.data));
      const last = chunks.at(-1);
      expect(last.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
      expect(typeof last.error.message).toBe('string');
      expect(last.choices).toEqual([{ index: 0, delta: { content: '' }, finish_reason: 'error' }]);
      expect(chunks.slice(1, -1).map((chunk) => chunk.choices[0].delta.content).join('').length).toBeGreaterThan(0);
      expect(context.double.requests.map((request) => request.model)).toEqual(['alpha']);
      // What was generated before the failure is billed, estimated by the tokenizer.
      const [entry] = await ledgerFor(context, key.id);
      expect(entry).toMatchObject({ servedModel: 'svc/alpha', status: 502, estimated: true });
      expect(entry.completionTokens).toBeGreaterThan(0);
    });

    it('turns a provider error event mid-stream into the error chunk', async () => {
      context.double.script('alpha', { kind: 'midstream_error', chunksBeforeError: 1 });
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello, stream: true });
      const chunks = parseSseText(await response.text()).map((event) => JSON.parse(event.data));
      expect(chunks.at(-1).choices[0].finish_reason).toBe('error');
      expect(chunks.at(-1).error.code).toBe('upstream_error');
      expect(context.double.requests).toHaveLength(1);
    });
  });

  describe('cancellation', () => {
    it('cancels the upstream request within a second when the client disconnects', async () => {
      context.double.script('alpha', { kind: 'text', chunks: Array.from({ length: 40 }, (_, index) => `t${index} `), chunkDelayMs: 100 });
      const controller = new AbortController();
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello, stream: true }, { signal: controller.signal });
      const reader = response.body!.getReader();
      await reader.read();
      const abortedAt = Date.now();
      controller.abort();
      await eventually(() => expect(context.double.aborted.map((entry) => entry.model)).toContain('alpha'), 2000);
      expect(context.double.aborted[0]!.at - abortedAt).toBeLessThan(1000);
    });
  });
}
