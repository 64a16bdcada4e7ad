import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/api-client.js';
import type { GatewayContext } from './gateway-context.js';

// Background responses and resumable streams, the same in both deployments: the job runs on a
// worker whether or not the client stays, any ingress answers for it, and a stream can be picked
// up again after any event.

const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index} `);

export function describeBackgroundResponses(context: GatewayContext): void {
  describe('background responses', () => {
    const client = () => new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: context.key.key, maxRetries: 0 });
    const settled = async (id: string) =>
      eventually(async () => {
        const response = await client().responses.retrieve(id);
        expect(['queued', 'in_progress']).not.toContain(response.status);
        return response;
      }, 15_000);

    it('answers at once with a queued response that polling shows completed', async () => {
      context.double.script('alpha', { kind: 'text', chunks: words(8), chunkDelayMs: 60 });
      const startedAt = Date.now();
      const queued = await client().responses.create({ model: 'svc/alpha', input: 'Write slowly', background: true });
      expect(Date.now() - startedAt).toBeLessThan(400);
      expect(queued.status).toBe('queued');
      expect(queued.background).toBe(true);
      const done = await settled(queued.id);
      expect(done.status).toBe('completed');
      expect(done.output_text).toBe(words(8).join(''));
      expect(done.usage?.output_tokens).toBeGreaterThan(0);
      expect(context.double.requests).toHaveLength(1);
    });

    it('refuses background without store', async () => {
      await expect(client().responses.create({ model: 'svc/alpha', input: 'x', background: true, store: false })).rejects.toMatchObject({ status: 400, param: 'background' });
    });

    it('cancels a running background response: the upstream call stops and the response says cancelled', async () => {
      context.double.script('alpha', { kind: 'text', chunks: words(60), chunkDelayMs: 100 });
      const queued = await client().responses.create({ model: 'svc/alpha', input: 'Write a lot', background: true });
      await eventually(() => expect(context.double.requests).toHaveLength(1), 5000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const cancelled = await client().responses.cancel(queued.id);
      expect(cancelled.status).toBe('cancelled');
      await eventually(() => expect(context.double.aborted).toHaveLength(1), 2000);
      const retrieved = await client().responses.retrieve(queued.id);
      expect(retrieved.status).toBe('cancelled');
      // Cancelling again gives the final object back.
      expect((await client().responses.cancel(queued.id)).status).toBe('cancelled');
    });

    it('resumes a stream the client cut with starting_after: exactly the missing events, generated once', async () => {
      context.double.script('alpha', { kind: 'text', chunks: words(12), chunkDelayMs: 50 });
      const first = await client().responses.create({ model: 'svc/alpha', input: 'Stream it', background: true, stream: true });
      const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of first) {
        seen.push(event);
        if (seen.length === 6) break; // the SDK closes the connection
      }
      const responseId = (seen[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
      const lastSeen = seen.at(-1)!.sequence_number;
      const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of await client().responses.retrieve(responseId, { stream: true, starting_after: lastSeen })) rest.push(event);
      const all: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of await client().responses.retrieve(responseId, { stream: true })) all.push(event);
      expect([...seen, ...rest]).toEqual(all);
      expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index));
      expect(all.at(-1)!.type).toBe('response.completed');
      const text = all.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('');
      expect(text).toBe(words(12).join(''));
      expect(context.double.requests).toHaveLength(1);
      expect(context.double.aborted).toHaveLength(0);
      expect((await client().responses.retrieve(responseId)).output_text).toBe(text);
    });

    it('follows a running background response live from a later GET', async () => {
      context.double.script('alpha', { kind: 'text', chunks: words(10), chunkDelayMs: 80 });
      const queued = await client().responses.create({ model: 'svc/alpha', input: 'Live', background: true });
      await eventually(() => expect(context.double.requests).toHaveLength(1), 5000);
      const stream = client().responses.stream({ response_id: queued.id });
      const final = await stream.finalResponse();
      expect(final.output_text).toBe(words(10).join(''));
    });
  });
}
