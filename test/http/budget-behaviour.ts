import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseChatRequest } from '../../src/ingress/surfaces/chat-completions/chat-request-schema.js';
import { chatToInternal } from '../../src/ingress/surfaces/chat-completions/chat-to-internal.js';
import { costNanos } from '../../src/shared/pricing.js';
import { countPromptTokens, countTextTokens, prepareTokenCounter } from '../../src/shared/token-counter.js';
import { parseSseText } from '../doubles/sse.js';
import { adminRequest, chat, createKey, hello, ledgerView } from '../support/api-client.js';
import { testPrices } from '../support/test-catalog.js';
import type { GatewayContext } from './gateway-context.js';

// Budgets, rate limits and the usage ledger, over HTTP. Requests go through deployment.url(),
// which alternates between the ingress instances of a scaled-out deployment, so every limit here
// is shown to hold across instances there. Money is compared in integer nano-USD throughout: the
// key's spend, the ledger, the usage API and the counters that enforce the budget must agree to
// the nano, not just to the cent.

/** What the gateway charges for `model` (test catalog prices), in nano-USD. */
function cost(model: string, promptTokens: number, completionTokens: number): number {
  const [prompt, completion] = testPrices[model]!;
  return costNanos({ promptUsdPerMillion: prompt, completionUsdPerMillion: completion }, promptTokens, completionTokens);
}

/** The prompt tokens admission counts for a request (the gateway's tokenizer). */
function promptTokens(body: Record<string, unknown>): number {
  return countPromptTokens(chatToInternal(parseChatRequest(body)));
}

const usd = (nanos: number): number => nanos / 1e9;
/** The usage API's cache and reasoning split of requests that have none (the OpenAI double reports none here). */
const noSplit = { cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0 };
const toNanos = (value: number): number => Math.round(value * 1e9);
const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function send(context: GatewayContext, key: string, body: unknown): Promise<Answer> {
  const response = await chat(context.deployment, key, body);
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // an SSE body stays text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

async function ledgerOf(context: GatewayContext, keyId: string, count: number): Promise<any[]> {
  return waitFor(async () => {
    const { status, body } = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${keyId}&limit=1000`);
    expect(status).toBe(200);
    expect(body.data).toHaveLength(count);
    return body.data.map(ledgerView);
  }, 5000);
}

async function spentNanos(context: GatewayContext, keyId: string): Promise<number> {
  const { body } = await adminRequest(context.deployment, 'GET', `/admin/v1/keys/${keyId}`);
  return toNanos(body.spent_usd);
}

async function usageOf(context: GatewayContext, query: string): Promise<any[]> {
  const { status, body } = await adminRequest(context.deployment, 'GET', `/admin/v1/usage?${query}`);
  expect(status, JSON.stringify(body)).toBe(200);
  return body.data;
}

async function patchKey(context: GatewayContext, keyId: string, fields: Record<string, unknown>): Promise<void> {
  const { status, body } = await adminRequest(context.deployment, 'PATCH', `/admin/v1/keys/${keyId}`, fields);
  expect(status, JSON.stringify(body)).toBe(200);
}

function rateHeaders(headers: Headers): Record<string, string | null> {
  const names = ['limit-requests', 'remaining-requests', 'reset-requests', 'limit-tokens', 'remaining-tokens', 'reset-tokens'];
  return Object.fromEntries(names.map((name) => [name, headers.get(`x-ratelimit-${name}`)]));
}

/** OpenAI's reset durations ("1m0s", "59s") in seconds; NaN when malformed. */
function seconds(duration: string | null): number {
  const match = /^(?:(\d+)m)?(\d+)s$/.exec(duration ?? '');
  return match ? Number(match[1] ?? 0) * 60 + Number(match[2]) : Number.NaN;
}

function expectBudgetRefusal(answer: Answer): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(402);
  expect(answer.body.error).toMatchObject({ type: 'insufficient_quota', code: 'budget_exceeded' });
  expect(answer.body.error.message).toMatch(/budget/);
}

function expectRateRefusal(answer: Answer): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429);
  expect(answer.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

/** A request whose worst case (prompt + max_tokens at alpha's prices) is exactly `reserve` nano-USD. */
function alphaRequest(maxTokens: number, extra: Record<string, unknown> = {}) {
  const body = { model: 'svc/alpha', messages: hello, max_tokens: maxTokens, ...extra };
  const prompt = promptTokens(body);
  return { body, prompt, reserve: cost('alpha', prompt, maxTokens) };
}

export function describeBudgets(context: GatewayContext): void {
  beforeAll(async () => {
    await prepareTokenCounter();
  });

  describe('budgets', () => {
    it('charges at most the budget when 200 concurrent requests race for it, and exactly the 10 that fit succeed', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      // Each answer costs exactly its reservation, so exactly 10 fit whatever the interleaving.
      context.double.script('alpha', { kind: 'text', text: 'ten', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const key = await createKey(context.deployment, { name: 'budget race', budget_usd: usd(10 * reserve) });
      const answers = await Promise.all(Array.from({ length: 200 }, () => send(context, key.key, body)));
      const served = answers.filter((answer) => answer.status === 200);
      expect(served).toHaveLength(10);
      for (const answer of answers.filter((a) => a.status !== 200)) expectBudgetRefusal(answer);
      expect(context.double.requests).toHaveLength(10);
      const entries = await ledgerOf(context, key.id, 10);
      expect(sum(entries.map((entry) => entry.costNanos))).toBe(10 * reserve);
      expect(await spentNanos(context, key.id)).toBe(10 * reserve);
      const [total] = await usageOf(context, `key_id=${key.id}`);
      expect(total).toEqual({ requests: 10, prompt_tokens: 10 * prompt, completion_tokens: 100, cost_usd: usd(10 * reserve), ...noSplit });
    }, 60_000);

    it('settles each request to its real cost, so cheaper answers leave room for more', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      const real = cost('alpha', prompt, 2);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 2 } });
      const key = await createKey(context.deployment, { name: 'settle', budget_usd: usd(2 * reserve) });
      // The m-th request fits while (m - 1) real costs plus one reservation stay within the budget.
      const fit = Math.floor((2 * reserve - reserve) / real) + 1;
      expect(fit).toBeGreaterThan(2); // more than budget / reservation: settlement really frees money
      for (let i = 0; i < fit; i++) expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      expect(await spentNanos(context, key.id)).toBe(fit * real);
      expect(fit * real).toBeLessThanOrEqual(2 * reserve);
    });

    it('reserves the worst case: max_tokens or the model limit, times n, at the dearest model of the chain', async () => {
      const small = alphaRequest(10);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: small.prompt, completion_tokens: 1 } });
      const key = await createKey(context.deployment, { name: 'worst case', budget_usd: usd(small.reserve) });
      // Without max_tokens the model's own output limit (1000 in the test catalog) is reserved.
      expectBudgetRefusal(await send(context, key.key, { model: 'svc/alpha', messages: hello }));
      expectBudgetRefusal(await send(context, key.key, { ...small.body, n: 2 }));
      expectBudgetRefusal(await send(context, key.key, { ...small.body, fallbacks: ['svc/beta'] }));
      expect(context.double.requests).toHaveLength(0);
      expect((await send(context, key.key, small.body)).status).toBe(200);
    });

    it('applies budget changes at once: raised, lowered and removed', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const key = await createKey(context.deployment, { name: 'patch budget', budget_usd: usd(2 * reserve) });
      for (let i = 0; i < 2; i++) expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      await patchKey(context, key.id, { budget_usd: usd(3 * reserve) });
      expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      await patchKey(context, key.id, { budget_usd: null });
      expect((await send(context, key.key, body)).status).toBe(200);
      await patchKey(context, key.id, { budget_usd: usd(4 * reserve) });
      expectBudgetRefusal(await send(context, key.key, body));
      await patchKey(context, key.id, { budget_usd: usd(5 * reserve) });
      expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      expect(await spentNanos(context, key.id)).toBe(5 * reserve);
    });

    it('says when a daily budget comes back: retry-after runs to 00:00 UTC', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const key = await createKey(context.deployment, { name: 'daily', budget_usd: usd(reserve), budget_period: 'daily' });
      expect((await send(context, key.key, body)).status).toBe(200);
      const refused = await send(context, key.key, body);
      expectBudgetRefusal(refused);
      const untilMidnight = (Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1) - Date.now()) / 1000;
      expect(Math.abs(Number(refused.headers.get('retry-after')) - untilMidnight)).toBeLessThan(5);
    });
  });

  describe('billing', () => {
    it('bills the tokenizer count, marked estimated, when the provider reports no usage (n = 3 counts every choice)', async () => {
      const key = await createKey(context.deployment, { name: 'estimated' });
      const text = ' The quick brown fox jumps over the lazy dog.';
      context.double.script('alpha', { kind: 'text', text, usage: 'omit' });
      const body = { model: 'svc/alpha', messages: hello, n: 3 };
      const answer = await send(context, key.key, body);
      expect(answer.status).toBe(200);
      expect(answer.body.choices).toHaveLength(3);
      const [entry] = await ledgerOf(context, key.id, 1);
      const prompt = promptTokens(body);
      const completion = countTextTokens(text.repeat(3));
      expect(completion).toBeGreaterThan(0);
      expect(entry).toMatchObject({ estimated: true, promptTokens: prompt, completionTokens: completion, costNanos: cost('alpha', prompt, completion) });
      expect(answer.body.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: completion });
    });

    it('bills what a cancelled stream generated, estimated, and no more', async () => {
      const key = await createKey(context.deployment, { name: 'cancelled' });
      const words = Array.from({ length: 40 }, (_, index) => ` word${index}`);
      context.double.script('alpha', { kind: 'text', chunks: words, chunkDelayMs: 60 });
      const body = { model: 'svc/alpha', messages: hello, stream: true };
      const controller = new AbortController();
      const response = await chat(context.deployment, key.key, body, { signal: controller.signal });
      expect(response.status).toBe(200);
      const received = await readContentUntil(response, 8);
      controller.abort();
      const [entry] = await ledgerOf(context, key.id, 1);
      expect(entry).toMatchObject({ status: 499, estimated: true, servedModel: 'svc/alpha', promptTokens: promptTokens(body) });
      // Everything the client saw is billed, plus at most what was in flight when it left; never the rest.
      expect(entry.completionTokens).toBeGreaterThanOrEqual(countTextTokens(received));
      expect(entry.completionTokens).toBeLessThan(countTextTokens(words.slice(0, 20).join('')));
      expect(entry.costNanos).toBe(cost('alpha', entry.promptTokens, entry.completionTokens));
      expect(await spentNanos(context, key.id)).toBe(entry.costNanos);
    });

    it('keeps spend, ledger, usage API and the enforced budget equal to the nano: fallbacks, n > 1, estimates, cancellations', async () => {
      // A budget from the start, so the counters track this key's spend settlement by settlement.
      const key = await createKey(context.deployment, { name: 'exact money', budget_usd: 1000 });
      // 1. A fallback: alpha is rate limited, beta answers; only beta is billed.
      context.double.script('alpha', { kind: 'error', status: 429 });
      context.double.script('beta', { kind: 'text', text: 'from beta', usage: { prompt_tokens: 1234, completion_tokens: 567 } });
      const fallback = await send(context, key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: hello });
      expect(fallback.body.model).toBe('svc/beta');
      context.double.reset();
      // 2. n = 3 with the provider's usage; 3. a streamed n = 2 without usage (estimated).
      context.double.script('gamma', { kind: 'text', text: 'three', usage: { prompt_tokens: 333, completion_tokens: 999 } });
      expect((await send(context, key.key, { model: 'svc/gamma', messages: hello, n: 3 })).status).toBe(200);
      context.double.script('delta', { kind: 'text', chunks: [' two', ' streamed', ' choices'], usage: 'omit' });
      expect((await send(context, key.key, { model: 'svc/delta', messages: hello, n: 2, stream: true })).status).toBe(200);
      // 4. A provider failure before any output: nothing to bill.
      context.double.script('epsilon', { kind: 'error', status: 500 });
      expect((await send(context, key.key, { model: 'svc/epsilon', messages: hello })).status).toBe(502);
      // 5. A stream cut by the provider after some content (estimated).
      context.double.script('zeta', { kind: 'midstream_drop', chunksBeforeDrop: 3 });
      expect((await send(context, key.key, { model: 'svc/zeta', messages: hello, stream: true })).status).toBe(200);
      // 6. A stream the client cancels halfway.
      context.double.script('eta', { kind: 'text', chunks: Array.from({ length: 30 }, (_, i) => ` w${i}`), chunkDelayMs: 50 });
      const controller = new AbortController();
      const cancelled = await chat(context.deployment, key.key, { model: 'svc/eta', messages: hello, stream: true }, { signal: controller.signal });
      await readContentUntil(cancelled, 5);
      controller.abort();

      const entries = await ledgerOf(context, key.id, 6);
      const byModel = new Map(entries.map((entry) => [entry.requestedModel, entry]));
      expect(byModel.get('svc/alpha')).toMatchObject({ servedModel: 'svc/beta', costNanos: cost('beta', 1234, 567), estimated: false });
      expect(byModel.get('svc/gamma')).toMatchObject({ costNanos: cost('gamma', 333, 999), estimated: false });
      expect(byModel.get('svc/delta')).toMatchObject({ estimated: true, completionTokens: countTextTokens(' two streamed choices two streamed choices') });
      expect(byModel.get('svc/epsilon')).toMatchObject({ servedModel: null, costNanos: 0, promptTokens: 0, completionTokens: 0 });
      expect(byModel.get('svc/zeta')).toMatchObject({ servedModel: 'svc/zeta', estimated: true });
      expect(byModel.get('svc/eta')).toMatchObject({ servedModel: 'svc/eta', estimated: true, status: 499 });
      for (const entry of entries) {
        if (entry.servedModel) {
          expect(entry.costNanos).toBeGreaterThan(0);
          expect(entry.costNanos).toBe(cost(entry.servedModel.slice(4), entry.promptTokens, entry.completionTokens));
        }
      }
      const ledgerTotal = sum(entries.map((entry) => entry.costNanos));
      expect(await spentNanos(context, key.id)).toBe(ledgerTotal);
      const [total] = await usageOf(context, `key_id=${key.id}`);
      expect(toNanos(total.cost_usd)).toBe(ledgerTotal);
      const byServedModel = await usageOf(context, `key_id=${key.id}&group_by=model`);
      expect(byServedModel.map((row) => row.model)).toEqual(['svc/beta', 'svc/delta', 'svc/eta', 'svc/gamma', 'svc/zeta', undefined]);
      expect(toNanos(sum(byServedModel.map((row) => row.cost_usd)))).toBe(ledgerTotal);

      // The counters that enforce the budget agree: with the budget set to spend + one probe's
      // worst case, exactly one probe fits (the counters are off by less than one probe, ~$0.00001).
      const probe = alphaRequest(1);
      context.double.script('alpha', { kind: 'text', text: 'p', usage: { prompt_tokens: probe.prompt, completion_tokens: 1 } });
      await patchKey(context, key.id, { budget_usd: usd(ledgerTotal + probe.reserve) });
      expect((await send(context, key.key, probe.body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, probe.body));
      expect(await spentNanos(context, key.id)).toBe(ledgerTotal + probe.reserve);
    }, 30_000);
  });

  describe('rate limits', () => {
    it('admits exactly rpm requests of a burst, and tells the rest when to retry', async () => {
      context.double.script('alpha', { kind: 'text', text: 'ok' });
      const key = await createKey(context.deployment, { name: 'rpm burst', rpm: 60 });
      const answers = await Promise.all(Array.from({ length: 150 }, () => send(context, key.key, { model: 'svc/alpha', messages: hello })));
      const served = answers.filter((answer) => answer.status === 200);
      expect(served).toHaveLength(60);
      expect(served.map((answer) => Number(answer.headers.get('x-ratelimit-remaining-requests'))).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));
      for (const answer of answers.filter((a) => a.status !== 200)) {
        expectRateRefusal(answer);
        // Up to a minute (one second more when another instance's clock read ran a moment ahead).
        expect(Number(answer.headers.get('retry-after'))).toBeLessThanOrEqual(61);
        expect(rateHeaders(answer.headers)).toMatchObject({ 'limit-requests': '60', 'remaining-requests': '0', 'limit-tokens': null });
        expect(seconds(answer.headers.get('x-ratelimit-reset-requests'))).toBeLessThanOrEqual(61);
      }
      expect(context.double.requests).toHaveLength(60);
    }, 60_000);

    it('counts tokens per minute: the worst case on admission, the real use once settled', async () => {
      const { body, prompt } = alphaRequest(100);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 5 } });
      const worst = prompt + 100;
      const used = prompt + 5;
      // Room for two requests only because the first one settles to what it really used.
      const tpm = worst + used;
      const key = await createKey(context.deployment, { name: 'tpm', tpm });
      const first = await send(context, key.key, body);
      expect(first.status).toBe(200);
      expect(rateHeaders(first.headers)).toMatchObject({ 'limit-tokens': String(tpm), 'remaining-tokens': String(used), 'reset-tokens': '1m0s', 'limit-requests': null });
      const second = await send(context, key.key, body);
      expect(second.status).toBe(200);
      expect(rateHeaders(second.headers)['remaining-tokens']).toBe('0');
      const refused = await send(context, key.key, body);
      expectRateRefusal(refused);
      expect(refused.body.error.message).toMatch(/tokens per minute/);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(50);
      expect(rateHeaders(refused.headers)).toMatchObject({ 'limit-tokens': String(tpm), 'remaining-tokens': String(tpm - 2 * used) });
      // A request that can never fit says so, without a retry hint that could never work.
      const huge = await send(context, key.key, { ...body, max_tokens: tpm });
      expect(huge.status).toBe(429);
      expect(huge.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
      expect(huge.body.error.message).toMatch(/max_tokens/);
      expect(huge.headers.get('retry-after')).toBeNull();
      expect(context.double.requests).toHaveLength(2);
    });

    it('limits concurrent requests, freeing the slot when a request ends', async () => {
      context.double.script('alpha', { kind: 'text', chunks: ['a', 'b', 'c', 'd'], chunkDelayMs: 150 });
      const key = await createKey(context.deployment, { name: 'concurrency', max_concurrent: 2 });
      const running = [send(context, key.key, { model: 'svc/alpha', messages: hello, stream: true }), send(context, key.key, { model: 'svc/alpha', messages: hello, stream: true })];
      await waitFor(() => expect(context.double.requests).toHaveLength(2));
      const refused = await send(context, key.key, { model: 'svc/alpha', messages: hello });
      expectRateRefusal(refused);
      expect(refused.body.error.message).toMatch(/2 concurrent requests/);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect((await Promise.all(running)).map((answer) => answer.status)).toEqual([200, 200]);
      expect((await send(context, key.key, { model: 'svc/alpha', messages: hello })).status).toBe(200);
    });

    it('sends the x-ratelimit headers on every response that reached admission: JSON, SSE, 402, 429 and upstream errors', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      const key = await createKey(context.deployment, { name: 'headers', rpm: 5, tpm: 100_000, budget_usd: usd(2 * reserve) });
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const json = await send(context, key.key, body);
      const sse = await send(context, key.key, { ...body, stream: true });
      expect(sse.headers.get('content-type')).toBe('text/event-stream');
      const budget = await send(context, key.key, body);
      expectBudgetRefusal(budget);
      await patchKey(context, key.id, { budget_usd: null });
      context.double.script('alpha', { kind: 'error', status: 500 });
      const upstream = await send(context, key.key, body);
      expect(upstream.status).toBe(502);
      context.double.reset();
      context.double.script('alpha', { kind: 'text', text: 'ok' });
      expect((await send(context, key.key, body)).status).toBe(200);
      expect((await send(context, key.key, body)).status).toBe(200);
      const limited = await send(context, key.key, body);
      expectRateRefusal(limited);
      const remaining = [json, sse, budget, upstream, limited].map((answer) => rateHeaders(answer.headers));
      for (const headers of remaining) {
        expect(headers['limit-requests']).toBe('5');
        expect(headers['limit-tokens']).toBe('100000');
        expect(seconds(headers['reset-requests'])).toBeGreaterThan(50);
        expect(headers['reset-tokens']).toBe(headers['reset-requests']);
      }
      // The refused budget request took no slot from the window.
      expect(remaining.map((headers) => headers['remaining-requests'])).toEqual(['4', '3', '3', '2', '0']);
    });

    it('applies rate-limit changes at once, against the requests already in the window', async () => {
      context.double.script('alpha', { kind: 'text', text: 'ok' });
      const key = await createKey(context.deployment, { name: 'patch rpm', rpm: 5 });
      const ask = () => send(context, key.key, { model: 'svc/alpha', messages: hello });
      for (let i = 0; i < 5; i++) expect((await ask()).status).toBe(200);
      expectRateRefusal(await ask());
      await patchKey(context, key.id, { rpm: 8 });
      for (let i = 0; i < 3; i++) expect((await ask()).status).toBe(200);
      const full = await ask();
      expectRateRefusal(full);
      expect(full.headers.get('x-ratelimit-limit-requests')).toBe('8');
      // Lowered below what the window already holds: refused at once, not after a fresh window.
      await patchKey(context, key.id, { rpm: 3 });
      expectRateRefusal(await ask());
      await patchKey(context, key.id, { rpm: null, max_concurrent: 1 });
      const open = await ask();
      expect(open.status).toBe(200);
      expect(open.headers.get('x-ratelimit-limit-requests')).toBeNull();
    });
  });

  describe('usage API', () => {
    it('answers totals and groups by key, model and day, filtered by key, model and time', async () => {
      const first = await createKey(context.deployment, { name: 'usage one' });
      const second = await createKey(context.deployment, { name: 'usage two' });
      context.double.script('alpha', { kind: 'text', text: 'a', usage: { prompt_tokens: 100, completion_tokens: 10 } });
      context.double.script('beta', { kind: 'text', text: 'b', usage: { prompt_tokens: 200, completion_tokens: 20 } });
      const since = new Date(Date.now() - 1000).toISOString();
      for (const [key, model] of [[first, 'alpha'], [first, 'beta'], [second, 'beta'], [second, 'beta']] as const) {
        expect((await send(context, key.key, { model: `svc/${model}`, messages: hello })).status).toBe(200);
      }
      const until = new Date(Date.now() + 1000).toISOString();
      const a = { prompt: 100, completion: 10, nanos: cost('alpha', 100, 10) };
      const b = { prompt: 200, completion: 20, nanos: cost('beta', 200, 20) };
      const row = (...parts: (typeof a)[]) => ({ requests: parts.length, prompt_tokens: sum(parts.map((p) => p.prompt)), completion_tokens: sum(parts.map((p) => p.completion)), cost_usd: usd(sum(parts.map((p) => p.nanos))), ...noSplit });
      const window = `since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`;
      const keys = (await usageOf(context, `${window}&group_by=key`)).filter((r) => r.key_id === first.id || r.key_id === second.id);
      expect(keys).toEqual([first, second].sort((x, y) => (x.id < y.id ? -1 : 1)).map((key) => ({ key_id: key.id, ...(key === first ? row(a, b) : row(b, b)) })));
      expect(await usageOf(context, `key_id=${first.id}&group_by=model`)).toEqual([{ model: 'svc/alpha', ...row(a) }, { model: 'svc/beta', ...row(b) }]);
      expect(await usageOf(context, `key_id=${second.id}&model=svc/beta&${window}`)).toEqual([row(b, b)]);
      const today = new Date().toISOString().slice(0, 10);
      expect(await usageOf(context, `key_id=${second.id}&group_by=day`)).toEqual([{ day: today, ...row(b, b) }]);
      expect(await usageOf(context, `key_id=${second.id}&until=${encodeURIComponent(since)}`)).toEqual([{ requests: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, ...noSplit }]);
      const invalid = await adminRequest(context.deployment, 'GET', '/admin/v1/usage?group_by=hour');
      expect(invalid.status).toBe(400);
      expect(invalid.body.error).toMatchObject({ type: 'invalid_request_error', param: 'group_by' });
      const badTime = await adminRequest(context.deployment, 'GET', '/admin/v1/usage?since=yesterday');
      expect(badTime.status).toBe(400);
    });
  });
}

/**
 * Budget periods need the gateway's clock: these tests move Date (vi.setSystemTime) in this
 * process, so they run only against deployments whose ingress and workers live in the test process.
 */
export function describeBudgetPeriods(context: GatewayContext): void {
  beforeAll(async () => {
    await prepareTokenCounter();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const at = (iso: string) => vi.setSystemTime(new Date(iso));

  describe('budget periods (with the gateway clock moved)', () => {
    it('starts a daily budget afresh at 00:00 UTC, and a monthly one on the 1st', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const daily = await createKey(context.deployment, { name: 'daily reset', budget_usd: usd(2 * reserve), budget_period: 'daily' });
      const monthly = await createKey(context.deployment, { name: 'monthly reset', budget_usd: usd(reserve), budget_period: 'monthly' });
      at('2031-01-31T23:59:58.000Z');
      for (let i = 0; i < 2; i++) expect((await send(context, daily.key, body)).status).toBe(200);
      const spent = await send(context, daily.key, body);
      expectBudgetRefusal(spent);
      expect(spent.headers.get('retry-after')).toBe('2');
      expect((await send(context, monthly.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, monthly.key, body));
      at('2031-01-31T23:59:59.999Z');
      expectBudgetRefusal(await send(context, daily.key, body));
      at('2031-02-01T00:00:00.000Z');
      for (let i = 0; i < 2; i++) expect((await send(context, daily.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, daily.key, body));
      expect((await send(context, monthly.key, body)).status).toBe(200);
      at('2031-02-27T12:00:00.000Z');
      const month = await send(context, monthly.key, body);
      expectBudgetRefusal(month);
      expect(month.headers.get('retry-after')).toBe(String(36 * 3600));
      // The ledger holds both days; spend is all-time.
      expect(await usageOf(context, `key_id=${daily.id}&group_by=day`)).toEqual([
        { day: '2031-01-31', requests: 2, prompt_tokens: 2 * prompt, completion_tokens: 20, cost_usd: usd(2 * reserve), ...noSplit },
        { day: '2031-02-01', requests: 2, prompt_tokens: 2 * prompt, completion_tokens: 20, cost_usd: usd(2 * reserve), ...noSplit },
      ]);
      expect(await spentNanos(context, daily.id)).toBe(4 * reserve);
    });

    it('applies a period change at once: spend is counted over the new period', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      const key = await createKey(context.deployment, { name: 'period change', budget_usd: usd(reserve) });
      at('2031-03-09T10:00:00.000Z'); // a Sunday
      expect((await send(context, key.key, body)).status).toBe(200);
      at('2031-03-10T10:00:00.000Z'); // Monday
      expectBudgetRefusal(await send(context, key.key, body)); // all-time budget: spent
      await patchKey(context, key.id, { budget_period: 'daily' });
      expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      // The week began this Monday: it holds only today's request, so one more fits.
      await patchKey(context, key.id, { budget_period: 'weekly', budget_usd: usd(2 * reserve) });
      expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      // March holds all three; back to all-time, likewise.
      await patchKey(context, key.id, { budget_period: 'monthly', budget_usd: usd(4 * reserve) });
      expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      await patchKey(context, key.id, { budget_period: 'none', budget_usd: usd(4 * reserve) });
      expectBudgetRefusal(await send(context, key.key, body));
      expect(await spentNanos(context, key.id)).toBe(4 * reserve);
    });

    it('bills a request that straddles midnight to the day it was admitted, as the ledger does', async () => {
      const { body, prompt, reserve } = alphaRequest(10);
      const key = await createKey(context.deployment, { name: 'straddle', budget_usd: usd(2 * reserve), budget_period: 'daily' });
      context.double.script('alpha', { kind: 'text', chunks: ['slow', ' answer'], chunkDelayMs: 300, usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      at('2031-04-01T23:59:59.900Z');
      const late = send(context, key.key, { ...body, stream: true });
      await waitFor(() => expect(context.double.requests).toHaveLength(1));
      at('2031-04-02T00:00:00.100Z');
      context.double.reset();
      context.double.script('alpha', { kind: 'text', text: 'ok', usage: { prompt_tokens: prompt, completion_tokens: 10 } });
      // Yesterday's request is still in flight and its reservation still held: one fits now.
      expect((await send(context, key.key, body)).status).toBe(200);
      expect((await late).status).toBe(200);
      await ledgerOf(context, key.id, 2);
      // Settled, it belongs to yesterday (as its ledger row does), so today has room for one more.
      expect((await send(context, key.key, body)).status).toBe(200);
      expectBudgetRefusal(await send(context, key.key, body));
      expect(await usageOf(context, `key_id=${key.id}&group_by=day`)).toEqual([
        { day: '2031-04-01', requests: 1, prompt_tokens: prompt, completion_tokens: 10, cost_usd: usd(reserve), ...noSplit },
        { day: '2031-04-02', requests: 2, prompt_tokens: 2 * prompt, completion_tokens: 20, cost_usd: usd(2 * reserve), ...noSplit },
      ]);
    });
  });
}

/** Like eventually(), timed with performance.now() so that it works while Date is frozen. */
async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 5000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** Reads SSE content deltas until `count` content chunks arrived; returns their text. */
async function readContentUntil(response: Response, count: number): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let raw = '';
  let text = '';
  let seen = 0;
  while (seen < count) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += decoder.decode(value, { stream: true });
    const complete = raw.lastIndexOf('\n\n');
    if (complete === -1) continue;
    for (const event of parseSseText(raw.slice(0, complete + 2))) {
      if (event.data === '[DONE]') continue;
      const content = JSON.parse(event.data).choices?.[0]?.delta?.content;
      if (content) {
        text += content;
        seen += 1;
      }
    }
    raw = raw.slice(complete + 2);
  }
  return text;
}
