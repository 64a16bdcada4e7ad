import type { HttpResponse } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Catalog, ModelEntry } from '../shared/catalog/catalog-types.js';
import { choiceCount, parseChatRequest, type ChatRequest } from '../shared/chat-request-schema.js';
import type { Counters } from '../shared/counters/counters.js';
import { errorFromDescription, GatewayError } from '../shared/errors.js';
import type { CompletionJob, JobEvent } from '../shared/job.js';
import type { IngressTransport } from '../shared/transport/transport.js';
import { admitRequest } from './admission.js';
import { authenticate } from './authenticate.js';
import { ChunkFormatter, completionBody, doneFrame } from './completion-format.js';
import { replyError, replyJson, type ReplyState } from './http-reply.js';
import type { JobRouter, PendingJob } from './job-router.js';
import type { KeyDirectory } from './key-directory.js';
import type { RequestContext } from './pipeline/request-wrapper.js';
import { SseWriter } from './sse-writer.js';

export interface ChatRouteDependencies {
  catalog: Catalog;
  counters: Counters;
  keys: KeyDirectory;
  transport: IngressTransport;
  router: JobRouter;
  logger: Logger;
  maxQueuedStreamBytes: number;
  /** Open requests, so that a draining server knows when it may exit. */
  openRequests: Set<string>;
}

function resolveTargets(catalog: Catalog, request: ChatRequest): ModelEntry[] {
  const ids = [request.model, ...(request.fallbacks ?? [])];
  return ids.map((id, position) => {
    const model = catalog.models.get(id);
    if (!model) {
      throw new GatewayError('model_not_found', `The model \`${id}\` does not exist. GET /v1/models lists the models this gateway serves.`, {
        param: position === 0 ? 'model' : `fallbacks[${position - 1}]`,
      });
    }
    return model;
  });
}

export function createChatCompletionsHandler(dependencies: ChatRouteDependencies) {
  const { catalog, counters, keys, transport, router } = dependencies;

  /** Registered through the request wrapper with the authorization header and a body. */
  return async function handle(context: RequestContext): Promise<void> {
    const { res, state } = context;
    // The key is checked from the headers before the body is wanted: an unauthenticated upload is
    // answered (and its connection closed) while it is still arriving, with nothing kept of it.
    const key = await authenticate(keys, context.headers.authorization ?? '');
    const parsed = await context.body!.json();
    if (parsed === undefined) return;
    const request = parseChatRequest(parsed);
    const targets = resolveTargets(catalog, request);
    const admitted = await admitRequest(counters, key, request, targets, state.requestId);
    state.extraHeaders = admitted.headers;
    if (state.aborted) {
      await counters.settle({ keyId: key.id, reservationId: admitted.reservationId, costNanos: 0, tokens: 0, budgetPeriod: key.budgetPeriod, now: Date.now() });
      return;
    }

    const job: CompletionJob = {
      id: state.requestId,
      replyTo: transport.ingressId,
      keyId: key.id,
      targets: targets.map((target) => target.id),
      request,
      stream: request.stream === true,
      reservationId: admitted.reservationId,
      reservedNanos: admitted.reservedNanos,
      budgetPeriod: key.budgetPeriod,
      enqueuedAt: Date.now(),
    };
    const created = Math.floor(job.enqueuedAt / 1000);
    const completionId = `chatcmpl-${job.id}`;
    const pending = job.stream
      ? streamingReply(res, state, completionId, created, request, () => finish())
      : jsonReply(res, state, completionId, created, () => finish());
    const finish = () => {
      router.unregister(job.id);
      dependencies.openRequests.delete(job.id);
    };
    context.onAbort = () => {
      finish();
      transport.cancel(job.id);
    };
    router.register(job.id, pending);
    dependencies.openRequests.add(job.id);
    try {
      await transport.enqueue(job);
    } catch (error) {
      finish();
      await counters.settle({ keyId: key.id, reservationId: admitted.reservationId, costNanos: 0, tokens: 0, budgetPeriod: key.budgetPeriod, now: Date.now() });
      throw error;
    }
  };

  function jsonReply(res: HttpResponse, state: ReplyState, id: string, created: number, finish: () => void): PendingJob {
    return {
      onEvent(event: JobEvent) {
        if (event.type === 'completed') {
          finish();
          replyJson(res, state, 200, completionBody(id, created, event.model, event.choices, event.usage, event.systemFingerprint));
        } else if (event.type === 'failed') {
          finish();
          replyError(res, state, errorFromDescription(event.error));
        }
      },
      onGap() {
        finish();
        replyError(res, state, new GatewayError('worker_lost', 'Events of this request were lost between the worker and the gateway.'));
      },
    };
  }

  function streamingReply(res: HttpResponse, state: ReplyState, id: string, created: number, request: ChatRequest, finish: () => void): PendingJob {
    const includeUsage = request.stream_options?.include_usage === true;
    const writer = new SseWriter(res, state, dependencies.maxQueuedStreamBytes, () => {
      finish();
      transport.cancel(state.requestId);
    });
    let formatter: ChunkFormatter | undefined;
    let servedModel = request.model;
    const fail = (error: GatewayError) => {
      finish();
      if (writer.started && formatter) writer.end(formatter.errorChunk(servedModel, { code: error.code, message: error.message, status: error.status }));
      else replyError(res, state, error);
    };
    return {
      onEvent(event: JobEvent) {
        switch (event.type) {
          case 'started':
            servedModel = event.model;
            formatter = new ChunkFormatter(id, created, event.model, includeUsage);
            writer.send(formatter.roleChunks(choiceCount(request)));
            return;
          case 'deltas':
            if (formatter) writer.send(formatter.deltas(event.deltas));
            return;
          case 'finished':
            finish();
            formatter ??= new ChunkFormatter(id, created, event.model, includeUsage);
            writer.end(formatter.usageChunk(event.model, event.usage) + doneFrame);
            return;
          case 'failed':
            fail(errorFromDescription(event.error));
            return;
          default:
            return;
        }
      },
      onGap() {
        fail(new GatewayError('worker_lost', 'Events of this stream were lost between the worker and the gateway.'));
      },
    };
  }
}
