import type { Logger } from 'pino';
import type { Catalog } from '../../../shared/catalog/catalog-types.js';
import type { InternalRequest } from '../../../shared/internal/request.js';
import type { ResponseEventLog } from '../../../shared/responses/response-event-log.js';
import type { Store } from '../../../shared/store/store.js';
import type { Usage } from '../../../shared/usage.js';
import { replyJson } from '../../http-reply.js';
import { costHeaders } from '../../pipeline/cost-header.js';
import { SseWriter } from '../../sse-writer.js';
import { resolveTargets } from '../../pipeline/model-resolution.js';
import type { JobTakeover, RelayingSurface, RenderContext, TakeoverStart } from '../../pipeline/surface.js';
import { renderResponsesError } from './responses-errors.js';
import { ResponseEventBuilder, sseFrames } from './responses-events.js';
import { echoedSettings, responseIdOf, type ResponseShell } from './responses-object.js';
import { ResponseRun, type RunClient } from './response-run.js';
import { parseResponsesRequest, type ResponsesRequest } from './responses-schema.js';
import { responsesToInternal } from './responses-to-internal.js';
import { resolveConversation, withItemIds, type Conversation } from './stored-conversation.js';

// POST /v1/responses: OpenAI's Responses API on the shared pipeline, translated to whichever
// target the model resolves to. Answers are relayed by a ResponseRun (takeOver), which stores
// them, keeps background streams for replay and lets background jobs outlive their request.

export interface ResponsesDependencies {
  catalog: Catalog;
  store: Store;
  log: ResponseEventLog;
  logger: Logger;
  /** How long stored responses are kept (SWITCHBOARD_RESPONSE_RETENTION_DAYS). */
  retentionMs: number;
  /** Runs relayed by this ingress, by response id, for cancellation. */
  runs: Map<string, ResponseRun>;
}

interface Parsed {
  request: ResponsesRequest;
  conversation: Conversation;
}

/** Whether any model the request may use is served by a provider that speaks Responses itself. */
function reachesNativeTarget(catalog: Catalog, request: InternalRequest): boolean {
  try {
    return resolveTargets(catalog, request).some((model) => model.deployments.some((deployment) => catalog.providers.get(deployment.provider)?.api === 'openai-responses'));
  } catch {
    // An unknown model: the pipeline answers that error right after.
    return false;
  }
}

function shellOf(context: RenderContext, request: ResponsesRequest): ResponseShell {
  return { id: responseIdOf(context.jobId), createdAt: context.created, model: request.model, settings: echoedSettings(request) };
}

export function createResponsesSurface(dependencies: ResponsesDependencies): RelayingSurface {
  const parsedRequests = new WeakMap<InternalRequest, Parsed>();
  const parsedOf = (context: RenderContext): Parsed => parsedRequests.get(context.request) ?? { request: { model: context.request.model }, conversation: { contextItems: [], inputItems: [] } };

  function takeOver(start: TakeoverStart): JobTakeover {
    const { request, conversation } = parsedOf(start.context);
    const shell = shellOf(start.context, request);
    const background = request.background === true;
    const stream = request.stream === true;
    const run = new ResponseRun(
      {
        responseId: shell.id,
        keyId: start.keyId,
        store: request.store !== false,
        background,
        createdAtIso: new Date(start.context.created * 1000).toISOString(),
        retentionMs: dependencies.retentionMs,
        inputItems: withItemIds(conversation.inputItems, shell.id),
        contextItems: conversation.contextItems,
      },
      new ResponseEventBuilder(shell),
      {
        cancelJob: start.cancelJob,
        finish: () => {
          dependencies.runs.delete(shell.id);
          start.finish();
        },
      },
      dependencies,
    );
    dependencies.runs.set(shell.id, run);

    // Nothing reaches the client before the job is queued: a refused enqueue is still a plain error.
    let released = false;
    const held: Array<() => void> = [];
    const whenReleased = (action: () => void) => (released ? action() : held.push(action));
    let client: RunClient;
    if (stream) {
      const writer = new SseWriter(start.res, start.state, start.maxQueuedStreamBytes, () => (background ? run.detach() : void run.cancel()));
      client = {
        events: (events) => {
          const frames = sseFrames(events);
          whenReleased(() => writer.send(frames));
        },
        end: () => whenReleased(() => writer.end('')),
      };
    } else {
      client = {
        end: ({ response, error }) => {
          if (error) start.fail(error);
          else replyJson(start.res, start.state, 200, JSON.stringify(response), costHeaders(response.usage as Usage | undefined));
        },
      };
    }
    // A background request is answered at once; its run goes on without a client.
    if (!background || stream) run.attach(client);
    return {
      pending: run,
      ready: run.begin(),
      enqueued: () => {
        released = true;
        for (const action of held.splice(0)) action();
        if (background && !stream) replyJson(start.res, start.state, 200, JSON.stringify(run.accepted ?? run.snapshot()));
      },
      refused: () => run.abandon(),
      clientGone: () => {
        if (background) run.detach();
        else void run.cancel();
      },
    };
  }

  return {
    name: 'responses',
    headerNames: ['authorization'],
    async parse(body, _headers, caller) {
      const request = parseResponsesRequest(body);
      const conversation = await resolveConversation(dependencies.store, caller.keyId, request);
      const internal = responsesToInternal(request, [...conversation.contextItems, ...conversation.inputItems]);
      // The client's own request rides along only where a target can use it: jobs stay small.
      if (!reachesNativeTarget(dependencies.catalog, internal)) delete internal.extras;
      parsedRequests.set(internal, { request, conversation });
      return internal;
    },
    renderError: renderResponsesError,
    takeOver,
  };
}
