import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { createKey, eventually, type CreatedKey } from './support/api-client.js';
import { scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment, type ManagedProcess, type ScaledDeployment } from './support/scaled-harness.js';

// Background responses across the processes of the scaled-out deployment: a response created on
// one ingress is cancelled and resumed through the other, and a worker killed during a background
// job makes it run again (no output yet) or end failed (output already produced), never twice.

const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index} `);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

if (!scaledOutAvailable) {
  console.warn(`responses scaled faults: ${scaledOutSkipNotice}`);
  describe.skip('responses scaled faults (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
} else {
  describe('background responses across 2 ingress + 2 worker processes', () => {
    let double: OpenAiProviderDouble;
    let deployment: ScaledDeployment;
    let key: CreatedKey;
    const via = (index: number) => new OpenAI({ baseURL: `${deployment.urls[index]}/v1`, apiKey: key.key, maxRetries: 0 });
    const settled = (id: string, index = 1) =>
      eventually(async () => {
        const response = await via(index).responses.retrieve(id);
        expect(['queued', 'in_progress']).not.toContain(response.status);
        return response;
      }, 20_000);
    const holderOf = (requestIndex: number) => deployment.workerThatSent(double.requests[requestIndex]!.headers);
    const replaceWorker = (gone: ManagedProcess) => deployment.replaceWorker(gone);

    beforeAll(async () => {
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      deployment = await startScaledDeployment({ openAiUrl: double.url, tagWorkers: true, firstTokenMs: 8000, totalMs: 30_000, environment: { LOG_LEVEL: 'silent' } });
      key = await createKey(deployment, { name: 'responses faults' });
    }, 60_000);
    beforeEach(() => double?.reset());
    afterAll(async () => {
      await deployment?.close();
      await double?.close();
    }, 30_000);

    it('cancels through the other ingress: the upstream call stops and the cancellation stands', async () => {
      double.script('alpha', { kind: 'text', chunks: words(80), chunkDelayMs: 100 });
      const queued = await via(0).responses.create({ model: 'svc/alpha', input: 'Long', background: true });
      await eventually(() => expect(double.requests).toHaveLength(1), 5000);
      await sleep(300);
      expect((await via(1).responses.cancel(queued.id)).status).toBe('cancelled');
      await eventually(() => expect(double.aborted).toHaveLength(1), 2000);
      // The relaying ingress notices its job went quiet; the stored cancellation is not overwritten.
      await sleep(5000);
      expect((await via(0).responses.retrieve(queued.id)).status).toBe('cancelled');
    }, 20_000);

    it('resumes through the other ingress a stream cut on the first', async () => {
      double.script('alpha', { kind: 'text', chunks: words(15), chunkDelayMs: 60 });
      const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of await via(0).responses.create({ model: 'svc/alpha', input: 'Go', background: true, stream: true })) {
        seen.push(event);
        if (seen.length === 5) break;
      }
      const id = (seen[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
      const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of await via(1).responses.retrieve(id, { stream: true, starting_after: seen.at(-1)!.sequence_number })) rest.push(event);
      const all = [...seen, ...rest];
      expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index));
      expect(all.at(-1)!.type).toBe('response.completed');
      expect(all.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('')).toBe(words(15).join(''));
      expect(double.requests).toHaveLength(1);
    });

    it('re-runs a background job whose worker is killed before any output', async () => {
      double.script('alpha', { kind: 'hang' }, { kind: 'text', chunks: ['re', 'run ', 'ok'] });
      const queued = await via(0).responses.create({ model: 'svc/alpha', input: 'Again', background: true });
      await eventually(() => expect(double.requests).toHaveLength(1), 5000);
      const victim = holderOf(0);
      victim.child.kill('SIGKILL');
      await victim.exited;
      const done = await settled(queued.id);
      expect(done.status).toBe('completed');
      expect(done.output_text).toBe('rerun ok');
      expect(double.requests).toHaveLength(2);
      await replaceWorker(victim);
    }, 30_000);

    it('ends failed, never duplicated, a background job whose worker is killed after output', async () => {
      const all = words(80);
      double.script('alpha', { kind: 'text', chunks: all, chunkDelayMs: 100 });
      const queued = await via(0).responses.create({ model: 'svc/alpha', input: 'Partial', background: true, stream: false });
      // The other ingress sees the partial output too (written about once a second while it runs).
      await eventually(async () => expect((await via(1).responses.retrieve(queued.id)).output_text.length).toBeGreaterThan(6), 8000);
      const victim = holderOf(0);
      victim.child.kill('SIGKILL');
      const failed = await settled(queued.id);
      expect(failed.status).toBe('failed');
      expect(failed.error?.code).toBe('worker_lost');
      expect(all.join('').startsWith(failed.output_text)).toBe(true);
      expect(failed.output_text.length).toBeGreaterThan(6);
      const replayed: OpenAI.Responses.ResponseStreamEvent[] = [];
      try {
        for await (const event of await via(1).responses.retrieve(queued.id, { stream: true })) replayed.push(event);
      } catch {
        // The replayed stream ends with the failure, which the SDK raises.
      }
      expect(replayed.filter((event) => event.type === 'response.output_text.delta').map((event) => (event as OpenAI.Responses.ResponseTextDeltaEvent).delta).join('')).toBe(failed.output_text);
      await replaceWorker(victim);
    }, 30_000);
  });
}
