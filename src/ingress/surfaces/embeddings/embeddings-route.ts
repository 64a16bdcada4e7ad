import { inClientEncoding } from '../../../shared/embeddings/embedding-encoding.js';
import type { EmbeddingsJob } from '../../../shared/job.js';
import { authenticate } from '../../authenticate.js';
import { replyError, replyJson } from '../../http-reply.js';
import { resolveTargets } from '../../pipeline/model-resolution.js';
import { costHeaders } from '../../pipeline/cost-header.js';
import { admittedJobFields, answerOnCompletion, enqueueWithReply } from '../../pipeline/job-registration.js';
import { meteredHandler, meterJob } from '../../pipeline/request-metering.js';
import { countingRefusals, credentialOf, type PipelineDependencies, type RequestParty } from '../../pipeline/request-pipeline.js';
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
  const { catalog, counters, keys, transport } = dependencies;

  return meteredHandler('embeddings', (call: RequestContext) => {
    const party: RequestParty = { keys, credential: credentialOf(call.headers) };
    return countingRefusals(dependencies.refusals, party, () => handle(call, party));
  });

  async function handle(call: RequestContext, party: RequestParty): Promise<void> {
    const { res, state } = call;
    const key = await authenticate(keys, party.credential);
    party.keyId = key.id;
    const body = await call.body!.json();
    if (body === undefined) return;
    const request = parseEmbeddingsRequest(body);
    party.model = request.model;
    const targets = resolveTargets(catalog, request, 'embeddings', key.allowedModels);
    call.model = targets[0]?.id;
    const project = await keys.projectOf(key);
    const admitted = await admitEmbeddings(counters, key, request, targets, state.requestId, project);
    state.extraHeaders = admitted.headers;
    const release = () => counters.settle({ keyId: key.id, reservationId: admitted.reservationId, costNanos: 0, tokens: 0, budgetPeriod: key.budgetPeriod, project: admitted.project, now: Date.now() });
    if (state.aborted) {
      await release();
      return;
    }
    const job: EmbeddingsJob = { kind: 'embeddings', ...admittedJobFields(call, transport, key, project, admitted), targets: targets.map((target) => target.id), request, stream: false };
    await enqueueWithReply(call, dependencies, job, (finish) => ({
      pending: answerOnCompletion(
        finish,
        (event) => {
          const embeddings = (event.embeddings ?? []).map((embedding) => inClientEncoding(embedding, request.encodingFormat));
          replyJson(res, state, 200, embeddingsBody(event.model, embeddings, event.usage), costHeaders(event.usage));
        },
        (error) => replyError(res, state, error),
      ),
    }), release, (pending) => meterJob('embeddings', call, false, pending));
  }
}
