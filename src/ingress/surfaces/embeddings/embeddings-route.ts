import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { inClientEncoding } from '../../../shared/embeddings/embedding-encoding.js';
import { errorFromDescription, GatewayError } from '../../../shared/errors.js';
import type { EmbeddingsJob } from '../../../shared/job.js';
import { authenticate } from '../../authenticate.js';
import { parseJsonBody, readBody } from '../../body-reader.js';
import { replyError, replyJson, type ReplyState } from '../../http-reply.js';
import { resolveTargets } from '../../pipeline/model-resolution.js';
import type { PipelineDependencies } from '../../pipeline/request-pipeline.js';
import { admitEmbeddings } from './embeddings-admission.js';
import { embeddingsBody } from './embeddings-render.js';
import { parseEmbeddingsRequest } from './embeddings-schema.js';

// POST /v1/embeddings (OpenAI's Embeddings API), on the same steps as the chat pipeline:
// authenticate, read and parse, resolve the models (embedding models only), admit, enqueue a job of
// the embeddings kind, answer from its `completed` event. Never streamed. Errors in OpenAI's shape.

export function createEmbeddingsHandler(dependencies: PipelineDependencies) {
  const { catalog, counters, keys, transport, router, logger } = dependencies;

  async function handle(res: HttpResponse, state: ReplyState, credential: string, progress: { bodyRead: boolean; cancel?: () => void }): Promise<void> {
    const body = await readBody(res, dependencies.maxBodyBytes, state);
    if (!body) return;
    progress.bodyRead = true;
    const key = await authenticate(keys, credential);
    const request = parseEmbeddingsRequest(parseJsonBody(body));
    const targets = resolveTargets(catalog, request, 'embeddings');
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
    };
    const finish = () => {
      router.unregister(job.id);
      dependencies.openRequests.delete(job.id);
    };
    router.register(job.id, {
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
    dependencies.openRequests.add(job.id);
    progress.cancel = () => {
      finish();
      transport.cancel(job.id);
    };
    try {
      await transport.enqueue(job);
    } catch (error) {
      finish();
      await release();
      throw error;
    }
  }

  return (res: HttpResponse, req: HttpRequest): void => {
    // HttpRequest is only valid until the first await: copy what is needed now.
    const authorization = req.getHeader('authorization');
    const apiKey = req.getHeader('x-api-key');
    const credential = authorization || (apiKey ? `Bearer ${apiKey}` : '');
    const state: ReplyState = { aborted: false, done: false, requestId: randomUUID() };
    const progress: { bodyRead: boolean; cancel?: () => void } = { bodyRead: false };
    res.onAborted(() => {
      state.aborted = true;
      progress.cancel?.();
    });
    if (dependencies.lifecycle.draining) {
      replyError(res, state, new GatewayError('service_unavailable', 'This gateway instance is shutting down; retry on another.', { retryAfterSeconds: 1 }), true);
      return;
    }
    handle(res, state, credential, progress).catch((error) => {
      if (!(error instanceof GatewayError)) logger.error({ err: error, requestId: state.requestId, surface: 'embeddings' }, 'request failed');
      // Until the body is read, the answer closes the connection: the unread rest would be taken for the next request.
      replyError(res, state, error, !progress.bodyRead);
    });
  };
}
