import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from './doubles/openai-provider-double.js';
import { chat, createKey, eventually, hello } from './support/api-client.js';
import { startDeployment, type TestDeployment } from './support/gateway-harness.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';
import { scaledOutAvailable } from './support/scaled-harness.js';

// OpenTelemetry traces through the public interface: the gateway exports OTLP/HTTP to a local
// receiver, configured only by the standard OTEL_* variables; one trace per request holds the
// ingress's request span, the queue wait, the worker's chain and one GenAI span per attempt,
// across processes when scaled out; a client's traceparent becomes the request span's parent.

const prompt = 'a prompt that must never leave in a span 4b1d';

function describeTracing(kind: 'embedded' | 'scaled') {
  describe(`${kind} deployment`, () => {
    let double: OpenAiProviderDouble;
    let receiver: OtlpReceiver;
    let deployment: TestDeployment;

    beforeAll(async () => {
      double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
      receiver = await startOtlpReceiver();
      deployment = await startDeployment(kind, {
        openAiUrl: double.url,
        environment: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.endpoint,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
          OTEL_BSP_SCHEDULE_DELAY: '100',
        },
      });
    }, 90_000);
    afterAll(async () => {
      await deployment?.close();
      await receiver?.close();
      await double?.close();
    }, 30_000);

    const trace = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
    const one = (spans: ReceivedSpan[], predicate: (span: ReceivedSpan) => boolean, what: string) => {
      const found = spans.filter(predicate);
      expect(found.length, `${what} in ${JSON.stringify(spans.map((span) => [span.service, span.name]))}`).toBe(1);
      return found[0]!;
    };

    it('exports one trace per request, child of the client traceparent, spanning ingress, queue, worker and each attempt', async () => {
      const key = await createKey(deployment, { name: 'traced key' });
      const traceId = randomBytes(16).toString('hex');
      const clientSpanId = randomBytes(8).toString('hex');
      double.script('alpha', { kind: 'error', status: 500 });
      double.script('beta', { kind: 'text', text: 'traced', usage: { prompt_tokens: 12, completion_tokens: 3 } });
      const response = await chat(deployment, key.key, { model: 'svc/alpha', fallbacks: ['svc/beta'], messages: [{ role: 'user', content: prompt }] }, {
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${clientSpanId}-01` },
      });
      expect(response.status).toBe(200);

      const spans = await eventually(() => {
        const found = trace(traceId);
        expect(found.filter((span) => span.name.startsWith('chat ')).length).toBe(2);
        expect(found.some((span) => span.name === 'chat.completions')).toBe(true);
        return found;
      }, 15_000);
      expect(receiver.unreadable).toBe(0);
      const request = one(spans, (span) => span.name === 'chat.completions', 'the request span');
      expect(request.parentSpanId).toBe(clientSpanId);
      expect(request.kind).toBe(2); // SERVER
      expect(request.attributes).toMatchObject({ 'http.response.status_code': 200, 'gen_ai.request.model': 'svc/alpha', 'gen_ai.response.model': 'svc/beta' });
      const queue = one(spans, (span) => span.name === 'queue wait', 'the queue wait');
      const chain = one(spans, (span) => span.name === 'fallback chain', 'the chain span');
      expect(queue.parentSpanId).toBe(request.spanId);
      expect(chain.parentSpanId).toBe(request.spanId);
      const failed = one(spans, (span) => span.name === 'chat alpha', 'the failed attempt');
      const served = one(spans, (span) => span.name === 'chat beta', 'the served attempt');
      for (const attempt of [failed, served]) {
        expect(attempt.parentSpanId).toBe(chain.spanId);
        expect(attempt.kind).toBe(3); // CLIENT
        expect(attempt.attributes).toMatchObject({ 'gen_ai.system': 'openai', 'gen_ai.operation.name': 'chat' });
      }
      expect(failed.attributes).toMatchObject({ 'gen_ai.request.model': 'alpha', 'error.type': 'server_error', 'http.response.status_code': 500 });
      expect(served.attributes).toMatchObject({
        'gen_ai.request.model': 'beta',
        'gen_ai.response.model': 'beta',
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 3,
        'gen_ai.response.finish_reasons': ['stop'],
      });
      if (kind === 'scaled') {
        // The request span comes from an ingress process, the rest from a worker process.
        expect(request.service).toBe('switchboard-ingress');
        for (const span of [queue, chain, failed, served]) expect(span.service).toBe('switchboard-worker');
      } else {
        expect(new Set(spans.map((span) => span.service))).toEqual(new Set(['switchboard']));
      }
      // Neither the prompt nor any key travels in a span.
      const exported = JSON.stringify(receiver.spans);
      for (const secret of [prompt, key.key, 'upstream-secret-key']) expect(exported).not.toContain(secret);
    }, 30_000);

    it('starts a new trace for a request without traceparent, streams included', async () => {
      const key = await createKey(deployment, { name: 'untraced key' });
      double.script('gamma', { kind: 'text', chunks: ['a', 'b'], usage: { prompt_tokens: 2, completion_tokens: 2 } });
      const before = new Set(receiver.spans.map((span) => span.traceId));
      const response = await chat(deployment, key.key, { model: 'svc/gamma', stream: true, messages: hello });
      expect(response.status).toBe(200);
      await response.text();
      const spans = await eventually(() => {
        const fresh = receiver.spans.filter((span) => !before.has(span.traceId) && span.name === 'chat gamma');
        expect(fresh.length).toBe(1);
        const found = trace(fresh[0]!.traceId);
        expect(found.map((span) => span.name).sort()).toEqual(['chat gamma', 'chat.completions', 'fallback chain', 'queue wait']);
        return found;
      }, 15_000);
      const request = one(spans, (span) => span.name === 'chat.completions', 'the request span');
      expect(request.parentSpanId === '' || request.parentSpanId === 'undefined').toBe(true);
      expect(one(spans, (span) => span.name === 'chat gamma', 'the attempt').attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 2, 'gen_ai.usage.output_tokens': 2 });
    }, 30_000);
  });
}

describeTracing('embedded');
if (scaledOutAvailable) describeTracing('scaled');
else describe.skip('scaled-out traces (REDIS_URL / DATABASE_URL not set)', () => it('needs REDIS_URL and DATABASE_URL', () => undefined));
