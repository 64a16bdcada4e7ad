import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { readSse } from '../doubles/sse.js';
import { createKey } from '../support/api-client.js';
import { anthropicClient, apiFailure, eventData, hello, ledgerOf, messagesBodyLimit, postMessages, type MessagesContext } from './messages-context.js';

// Failures in Anthropic's own shape and statuses, so the official client raises its typed errors
// and Claude Code's recovery (which reads upstream wording such as "prompt is too long") still
// works; fallbacks from the request body and from the catalog, before the first content only.

/** The Messages params plus the gateway's `fallbacks` extension, which the client sends along untouched. */
function withFallbacks<T extends Anthropic.MessageCreateParams>(params: T, fallbacks: string[]): T {
  return { ...params, fallbacks } as T;
}

const small = { max_tokens: 64, messages: hello };

export function describeMessagesErrors(context: MessagesContext): void {
  describe('errors, in Anthropic shape', () => {
    it('refuses a bad or missing key with 401 authentication_error', async () => {
      const error = await apiFailure(anthropicClient(context, 'sk-service-wrong').messages.create({ model: 'svc/claude-test', ...small }));
      expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(error.type).toBe('authentication_error');
      const missing = await fetch(`${context.deployment.url()}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'svc/claude-test', ...small }) });
      expect(missing.status).toBe(401);
      expect(missing.headers.get('request-id')).toBeTruthy();
      const body = await missing.json();
      expect(body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
      expect(typeof body.error.message).toBe('string');
      expect(context.anthropic.requests).toHaveLength(0);
    });

    it('refuses a malformed request with 400 invalid_request_error and an unknown model with 404 not_found_error, calling no one', async () => {
      const noMaxTokens = await postMessages(context, { model: 'svc/claude-test', messages: hello });
      expect(noMaxTokens.status).toBe(400);
      expect(await noMaxTokens.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      const error = await apiFailure(anthropicClient(context).messages.create({ model: 'svc/no-such-model', ...small }));
      expect(error).toBeInstanceOf(Anthropic.NotFoundError);
      expect(error.type).toBe('not_found_error');
      expect(context.anthropic.requests).toHaveLength(0);
      expect(context.openai.requests).toHaveLength(0);
    });

    it('refuses a body over the limit with 413 request_too_large', async () => {
      const response = await postMessages(context, { model: 'svc/claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'x'.repeat(messagesBodyLimit + 1000) }] });
      expect(response.status).toBe(413);
      expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
      expect(context.anthropic.requests).toHaveLength(0);
    });

    it("raises RateLimitError when the key's rate limit refuses, with retry-after", async () => {
      const key = await createKey(context.deployment, { name: 'messages rpm', rpm: 1 });
      context.anthropic.script('claude-test', { kind: 'text', text: 'first' });
      await anthropicClient(context, key.key).messages.create({ model: 'svc/claude-test', ...small });
      const error = await apiFailure(anthropicClient(context, key.key).messages.create({ model: 'svc/claude-test', ...small }));
      expect(error).toBeInstanceOf(Anthropic.RateLimitError);
      expect(error.type).toBe('rate_limit_error');
      expect(Number(error.headers?.get('retry-after'))).toBeGreaterThan(0);
      expect(context.anthropic.requests).toHaveLength(1);
    });

    it('raises RateLimitError for an upstream 429 with nowhere to fall back, passing retry-after on', async () => {
      context.anthropic.script('claude-test', { kind: 'error', status: 429, retryAfter: '7' });
      const error = await apiFailure(anthropicClient(context).messages.create({ model: 'svc/claude-test', ...small }));
      expect(error).toBeInstanceOf(Anthropic.RateLimitError);
      expect(error.type).toBe('rate_limit_error');
      expect(error.headers?.get('retry-after')).toBe('7');
    });

    it('answers an upstream 529 with nowhere to fall back as 529 overloaded_error, which clients retry', async () => {
      context.anthropic.script('claude-test', { kind: 'error', status: 529 });
      const error = await apiFailure(anthropicClient(context).messages.create({ model: 'svc/claude-test', ...small }));
      expect(error.status).toBe(529);
      expect(error.type).toBe('overloaded_error');
    });

    it("passes an upstream 400 on with its wording (Claude Code compacts on 'prompt is too long')", async () => {
      const wording = 'prompt is too long: 250000 tokens > 200000 maximum';
      context.anthropic.script('claude-test', { kind: 'error', status: 400, message: wording });
      const error = await apiFailure(anthropicClient(context).messages.create(withFallbacks({ model: 'svc/claude-test', ...small }, ['svc/alpha'])));
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect(error.type).toBe('invalid_request_error');
      expect(error.message).toContain(wording);
      // A refused request is not the provider's fault: nothing falls back.
      expect(context.openai.requests).toHaveLength(0);
    });

    it('refuses a request the budget cannot cover with 402 billing_error, before any call', async () => {
      const key = await createKey(context.deployment, { name: 'messages budget', budget_usd: 0.0001 });
      const error = await apiFailure(anthropicClient(context, key.key).messages.create({ model: 'svc/claude-test', max_tokens: 20_000, messages: hello }));
      expect(error.status).toBe(402);
      expect(error).toBeInstanceOf(Anthropic.PaymentRequiredError);
      expect(error.type).toBe('billing_error');
      expect(context.anthropic.requests).toHaveLength(0);
    });

    it('ends a stream that fails after content with an error event the client throws; nothing falls back', async () => {
      context.anthropic.script('claude-test', { kind: 'blocks', blocks: [{ type: 'text', text: 'first part' }, { type: 'text', text: 'never sent' }], errorAfterBlocks: 1 });
      const stream = await anthropicClient(context).messages.create(withFallbacks({ model: 'svc/claude-test', ...small, stream: true }, ['svc/alpha']));
      let text = '';
      const error = await (async () => {
        for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
      })().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(text).toBe('first part');
      expect(error).toBeInstanceOf(Anthropic.APIError);
      expect(context.openai.requests).toHaveLength(0);

      context.anthropic.script('claude-test', { kind: 'blocks', blocks: [{ type: 'text', text: 'again' }, { type: 'text', text: 'never' }], errorAfterBlocks: 1 });
      const raw = await postMessages(context, { model: 'svc/claude-test', ...small, stream: true });
      const events = (await readSse(raw)).events;
      const last = events.at(-1)!;
      expect(last.event).toBe('error');
      const body = JSON.parse(last.data);
      expect(body).toMatchObject({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
      expect(eventData(events.slice(0, -1)).map((event) => event.type)).not.toContain('message_stop');
    });
  });

  describe('fallbacks', () => {
    it('falls back from the body field on an upstream 529 and bills only the model that answered', async () => {
      const key = await createKey(context.deployment, { name: 'messages fallback' });
      context.anthropic.script('claude-test', { kind: 'error', status: 529 });
      context.openai.script('alpha', { kind: 'text', text: 'from alpha', usage: { prompt_tokens: 10, completion_tokens: 3 } });
      const message = await anthropicClient(context, key.key).messages.create(withFallbacks({ model: 'svc/claude-test', ...small }, ['svc/alpha']));
      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'from alpha' })]);
      const [entry] = await ledgerOf(context, key.id);
      expect(entry).toMatchObject({ requestedModel: 'svc/claude-test', servedModel: 'svc/alpha', promptTokens: 10, completionTokens: 3 });
      expect(entry!.attempts.map((attempt) => [attempt.model, attempt.outcome])).toEqual([
        ['svc/claude-test', 'overloaded'],
        ['svc/alpha', 'success'],
      ]);
    });

    it("falls back along the catalog's fallbacks when the request names none", async () => {
      context.anthropic.script('claude-backed', { kind: 'error', status: 529 });
      context.openai.script('alpha', { kind: 'text', text: 'catalog fallback' });
      const message = await anthropicClient(context).messages.create({ model: 'svc/claude-backed', ...small });
      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'catalog fallback' })]);
      expect(context.anthropic.requests.map((request) => request.model)).toEqual(['claude-backed']);
      expect(context.openai.requests.map((request) => request.model)).toEqual(['alpha']);
    });

    it('falls back when a stream fails with overloaded_error before any content', async () => {
      context.anthropic.script('claude-backed', { kind: 'overloaded_event' });
      context.openai.script('alpha', { kind: 'text', chunks: ['rescued', ' stream'] });
      const final = await anthropicClient(context).messages.stream({ model: 'svc/claude-backed', ...small }).finalMessage();
      expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'rescued stream' })]);
      expect(final.stop_reason).toBe('end_turn');
    });
  });
}
