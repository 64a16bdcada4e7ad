import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

// OpenTelemetry traces, off unless the standard OTEL_* variables ask for them: the code speaks only
// @opentelemetry/api, and the SDK with its OTLP/HTTP exporter is started when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (the exporter reads its
// own OTEL_EXPORTER_OTLP_* settings, the batch processor OTEL_BSP_*). While off, every helper here
// returns at once without allocating, so the request path pays one boolean test.
// One trace per request crosses processes: the ingress injects its span's context (W3C
// traceparent) into the job, which carries it through the queue to the worker.

let enabled = false;
let provider: NodeTracerProvider | undefined;

const tracerName = 'switchboard';

export function tracingEnabled(): boolean {
  return enabled;
}

function wanted(environment: NodeJS.ProcessEnv): boolean {
  if ((environment.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return false;
  if ((environment.OTEL_TRACES_EXPORTER ?? '').toLowerCase() === 'none') return false;
  return Boolean(environment.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || environment.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/**
 * Starts the SDK when the environment asks for traces; `serviceName` is the default of
 * OTEL_SERVICE_NAME (switchboard, switchboard-ingress, switchboard-worker). Idempotent.
 */
export function startTracing(environment: NodeJS.ProcessEnv, serviceName: string): boolean {
  if (enabled || !wanted(environment)) return enabled;
  // envDetector reads process.env: the gateway may have been given another environment (tests).
  const fromEnvironment = resourceFromAttributes({
    'service.name': environment.OTEL_SERVICE_NAME || serviceName,
  });
  provider = new NodeTracerProvider({
    resource: defaultResource().merge(detectResources({ detectors: [envDetector] })).merge(fromEnvironment),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(exporterOptions(environment)), batchOptions(environment))],
  });
  provider.register();
  enabled = true;
  return true;
}

function exporterOptions(environment: NodeJS.ProcessEnv): { url?: string } {
  // The exporter reads process.env itself; an explicitly passed environment (embedded tests) wins.
  const traces = environment.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (traces) return { url: traces };
  const base = environment.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (base) return { url: `${base.replace(/\/$/, '')}/v1/traces` };
  return {};
}

function batchOptions(environment: NodeJS.ProcessEnv): { scheduledDelayMillis?: number } {
  const delay = Number(environment.OTEL_BSP_SCHEDULE_DELAY);
  return Number.isFinite(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {};
}

/** Sends what is buffered and stops; called on shutdown so the last requests' spans are not lost. */
export async function stopTracing(): Promise<void> {
  if (!provider) return;
  await provider.shutdown().catch(() => undefined);
  provider = undefined;
  enabled = false;
  trace.disable();
  propagation.disable();
  context.disable();
}

/** The W3C trace context a job carries across the queue. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** Ingress: the request's span, child of the client's `traceparent` when it sent one. */
export function startRequestSpan(name: string, traceparent: string | undefined, tracestate: string | undefined): Span | undefined {
  if (!enabled) return undefined;
  const carrier: TraceCarrier = {};
  if (traceparent) carrier.traceparent = traceparent;
  if (tracestate) carrier.tracestate = tracestate;
  const parent = propagation.extract(context.active(), carrier);
  return trace.getTracer(tracerName).startSpan(name, { kind: SpanKind.SERVER }, parent);
}

export function carrierOf(span: Span | undefined): TraceCarrier | undefined {
  if (!span) return undefined;
  const carrier: TraceCarrier = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  return carrier;
}

export function endSpan(span: Span | undefined, attributes: Attributes, failed: boolean, message?: string): void {
  if (!span) return;
  span.setAttributes(attributes);
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.end();
}

/**
 * Worker: the queue wait (from the ingress's enqueue to now, a span of its own) and the job's chain
 * span, as children of the request span the job carries. `run` executes inside the chain span's
 * context so that attempt spans become its children.
 */
export async function inJobSpans<T>(carrier: TraceCarrier | undefined, enqueuedAt: number, attributes: Attributes, run: () => Promise<T>): Promise<T> {
  if (!enabled) return run();
  const tracer = trace.getTracer(tracerName);
  const parent: Context = propagation.extract(context.active(), carrier ?? {});
  tracer.startSpan('queue wait', { kind: SpanKind.CONSUMER, startTime: enqueuedAt, attributes: { 'messaging.operation.type': 'receive' } }, parent).end();
  const chain = tracer.startSpan('fallback chain', { kind: SpanKind.INTERNAL, attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, chain), run);
  } catch (error) {
    chain.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    chain.end();
  }
}

/** Worker: one provider attempt, as a GenAI client span ("{operation} {model}"). */
export function startAttemptSpan(operation: string, attributes: Attributes): Span | undefined {
  if (!enabled) return undefined;
  return trace.getTracer(tracerName).startSpan(`${operation} ${String(attributes['gen_ai.request.model'] ?? '')}`.trim(), { kind: SpanKind.CLIENT, attributes });
}
