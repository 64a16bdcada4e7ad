import { inClientEncoding } from '../../../shared/embeddings/embedding-encoding.js';
import { errorFromDescription, GatewayError } from '../../../shared/errors.js';
import type { EmbeddingsJob } from '../../../shared/job.js';
import { authenticate } from '../../authenticate.js';
import { replyError, replyJson } from '../../http-reply.js';
import { resolveTargets } from '../../pipeline/model-resolution.js';
import { meteredHandler, meterJob } from '../../pipeline/request-metering.js';
import { carrierOf } from '../../../shared/observability/tracing.js';
import { credentialOf, type PipelineDependencies } from '../../pipeline/request-pipeline.js';
import type { RequestContext, RouteHandler, RouteOptions } from '../../pipeline/request-wrapper.js';
import { admitEmbeddings } from './embeddings-admission.js';
import { embeddingsBody } from './embeddings-render.js';
import { parseEmbeddingsRequest } from './embeddings-schema.js';

// POST /v1/embeddings (OpenAI's Embeddings API), on the same steps as the chat pipeline:
// authenticate, read and parse, resolve the models (embedding models only), admit, enqueue a job of
// the embeddings kind, answer from its `completed` event. Never streamed. Errors in OpenAI's shape.

/** Registered through the request wrapper: the key's headers and a body. */
export const embeddingsRouteOptions: RouteOptions = { headers: ['authorization', 'x-api-key', 'traceparent', 'tracestate'], body: true };

export function createEmbeddingsHandler(dependencies: PipelineDependencies): RouteHandler {
  const { catalog, counters, keys, transport, router } = dependencies;

  return meteredHandler('embeddings', async function handle(call: RequestContext): Promise<void> {
    const { res, state } = call;
    const key = await authenticate(keys, credentialOf(call.headers));
    const body = await call.body!.json();
    if (body === undefined) return;
    const request = parseEmbeddingsRequest(body);
    const targets = resolveTargets(catalog, request, 'embeddings');
    call.model = targets[0]?.id;
    const admitted = await admitEmbeddings(counters, key, request, targets, state.requestId);
    state.extraHeaders = admitted.headers;
    const release = () => counters.settle({ keyId: key.id, reservationId: admitted.reservationId, costNanos: 0, tokens: 0, budgetPeriod: key.budgetPeriod, now: Date.now() });
    if (state.aborted) {
      await release();
      return;
    }
    const job: EmbeddingsJob = {
      kind: 'embeddings',
      id: state.requestId,
      replyTo: transport.ingressId,
      keyId: key.id,
      targets: targets.map((target) => target.id),
      request,
      stream: false,
      reservationId: admitted.reservationId,
      reservedNanos: admitted.reservedNanos,
      budgetPeriod: key.budgetPeriod,
      enqueuedAt: Date.now(),
      trace: carrierOf(call.span),
    };
    const finish = () => {
      router.unregister(job.id);
      dependencies.openRequests.delete(job.id);
    };
    const metered = meterJob('embeddings', call, false, {
      onEvent(event) {
        if (event.type === 'completed') {
          finish();
          const embeddings = (event.embeddings ?? []).map((embedding) => inClientEncoding(embedding, request.encodingFormat));
          replyJson(res, state, 200, embeddingsBody(event.model, embeddings, event.usage));
        } else if (event.type === 'failed') {
          finish();
          replyError(res, state, errorFromDescription(event.error));
        }
      },
      onGap() {
        finish();
        replyError(res, state, new GatewayError('worker_lost', 'Events of this request were lost between the worker and the gateway.'));
      },
    });
    router.register(job.id, metered);
    dependencies.openRequests.add(job.id);
    call.onAbort = () => {
      metered.clientGone();
      finish();
      transport.cancel(job.id);
    };
    try {
      await transport.enqueue(job);
    } catch (error) {
      finish();
      metered.discard();
      await release();
      throw error;
    }
  });
}
