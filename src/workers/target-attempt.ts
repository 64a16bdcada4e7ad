import type { ModelDeployment, ModelEntry, ProviderConfig } from '../shared/catalog/catalog-types.js';
import { GatewayError } from '../shared/errors.js';
import type { InternalRequest } from '../shared/internal/request.js';
import { cleaned, detailTextLimit, presentingTranslator, presentProviderFailure } from '../shared/providers/failure-messages.js';
import type { AdapterContext, CompletionChoice, NormalizedCompletion, ChatAdapter, UpstreamFailure } from '../shared/providers/chat-adapter.js';
import type { JobControl } from '../shared/transport/transport.js';
import type { Usage } from '../shared/usage.js';
import { classifyNetworkError, type ProviderClient } from './provider-client.js';
import { jobStreamSink, relayStream, type RelayState, type StreamSink } from './stream-relay.js';

// One upstream call for one deployment of one target. Streams are relayed as they arrive (see
// stream-relay.ts); a non-streaming answer is parsed whole.

export interface AttemptInput {
  request: InternalRequest;
  stream: boolean;
  model: ModelEntry;
  deployment: ModelDeployment;
  provider: ProviderConfig;
  adapter: ChatAdapter;
  client: ProviderClient;
  control: JobControl;
  /** Cancels this call; the job's signal unless a fan-out needs to stop its calls separately. */
  signal?: AbortSignal;
  /** Shared by the calls of one fan-out; by default the job's own. */
  sink?: StreamSink;
  /** Renumbers the answer's only choice; set by a fan-out, whose call i produces choice i. */
  choiceIndex?: number;
}

export type AttemptResult =
  | {
      ok: true;
      usage?: Usage;
      completionText: string;
      choices?: CompletionChoice[];
      systemFingerprint?: string;
      /** Until the first token was relayed (streams) or the answer was complete; feeds the latency average. */
      latencyMs: number;
    }
  | {
      ok: false;
      failure: UpstreamFailure;
      started: boolean;
      usage?: Usage;
      completionText: string;
      /** The gateway itself refused the request (the adapter could not translate it): answered as is. */
      gatewayError?: GatewayError;
    };

/** Combines the caller's cancellation with this attempt's own timers. */
export class AttemptSignal {
  readonly controller = new AbortController();
  timeoutReason?: string;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly onParentAbort = () => this.controller.abort();

  constructor(private readonly parent: AbortSignal) {
    if (parent.aborted) this.controller.abort();
    else parent.addEventListener('abort', this.onParentAbort, { once: true });
  }

  arm(milliseconds: number, reason: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timeoutReason ??= reason;
      this.controller.abort();
    }, milliseconds);
    this.timers.push(timer);
    return timer;
  }

  dispose(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.parent.removeEventListener('abort', this.onParentAbort);
  }
}

export function choicesText(choices: CompletionChoice[]): string {
  let text = '';
  for (const choice of choices) {
    for (const part of choice.parts) {
      if (part.type === 'text' || part.type === 'reasoning' || part.type === 'refusal') text += part.text;
      else if (part.type === 'tool_call') text += part.name + part.arguments;
    }
  }
  return text;
}

/** An error page can be any size; what a message or log could use is at the start. */
const errorBodyLimit = 64 * 1024;

async function readErrorBody(body: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    size += chunk.length;
    // Leaving the loop destroys the rest of the body (and its connection).
    if (size >= errorBodyLimit) break;
  }
  return Buffer.concat(parts).toString('utf8').slice(0, errorBodyLimit);
}

/** A 200 whose body cannot be read (an HTML page, a truncated body) is the provider's failure, not ours. */
function readCompletion(adapter: ChatAdapter, body: string, context: AdapterContext, secrets: ReadonlyArray<string | undefined>): NormalizedCompletion | { failure: UpstreamFailure } {
  try {
    return adapter.parseResponse(body, context);
  } catch (error) {
    const detail = cleaned(`${(error as Error)?.message ?? String(error)}: ${body.slice(0, 300)}`, detailTextLimit, secrets);
    return { failure: { kind: 'server_error', message: "the provider's answer could not be read", detail } };
  }
}

export async function runAttempt(input: AttemptInput): Promise<AttemptResult> {
  const { provider, model, adapter, control } = input;
  const parentSignal = input.signal ?? control.signal;
  const sink = input.sink ?? jobStreamSink(control, model.id);
  const context: AdapterContext = { provider, upstreamModel: input.deployment.upstreamModel, stream: input.stream, maxOutputTokens: model.maxOutputTokens };
  const signal = new AttemptSignal(parentSignal);
  // Provider text that echoes our own key back must never reach anyone.
  const secrets = [provider.apiKey];
  signal.arm(provider.timeouts.totalMs, `The provider did not finish within ${provider.timeouts.totalMs} ms.`);
  const state: RelayState = { started: false, completionText: '' };
  const startedAt = performance.now();
  let firstTokenMs: number | undefined;
  // `started` is the sink's: once any call of a fan-out has streamed, every failure comes too late to fall back.
  const fail = (failure: UpstreamFailure, extra: { gatewayError?: GatewayError } = {}): AttemptResult => ({
    ok: false,
    failure,
    started: sink.started,
    usage: state.usage,
    completionText: state.completionText,
    ...extra,
  });
  try {
    let httpRequest;
    try {
      httpRequest = adapter.buildRequest(input.request, context);
    } catch (error) {
      // The request cannot be expressed in this provider's format; no other deployment or
      // fallback would be asked for the same thing differently, so the client hears why.
      if (error instanceof GatewayError) return fail({ kind: 'bad_request', status: error.status, message: error.message }, { gatewayError: error });
      throw error;
    }
    const firstTokenTimer = input.stream ? signal.arm(provider.timeouts.firstTokenMs, `No first token within ${provider.timeouts.firstTokenMs} ms.`) : undefined;
    const response = await input.client.send(httpRequest, provider, signal.controller.signal, {
      headersTimeoutMs: input.stream ? provider.timeouts.firstTokenMs : provider.timeouts.totalMs,
      bodyIdleTimeoutMs: input.stream ? provider.timeouts.firstTokenMs : provider.timeouts.totalMs,
    });
    if (response.status !== 200) return fail(presentProviderFailure(adapter.parseError(response.status, response.headers, await readErrorBody(response.body)), secrets));
    if (!input.stream) {
      const completion = readCompletion(adapter, await response.body.text(), context, secrets);
      if ('failure' in completion) return fail(completion.failure);
      const choices = input.choiceIndex === undefined ? completion.choices : completion.choices.map((choice) => ({ ...choice, index: input.choiceIndex! }));
      return {
        ok: true,
        usage: completion.usage,
        completionText: choicesText(choices),
        choices,
        systemFingerprint: completion.systemFingerprint,
        latencyMs: Math.round(performance.now() - startedAt),
      };
    }
    const outcome = await relayStream(response.body, presentingTranslator(adapter.createStreamTranslator(context), secrets), sink, state, {
      choiceIndex: input.choiceIndex,
      onFirstToken: () => {
        firstTokenMs = Math.round(performance.now() - startedAt);
        clearTimeout(firstTokenTimer);
      },
    });
    if (!outcome.ok) return fail(outcome.failure);
    return { ok: true, usage: state.usage, completionText: state.completionText, latencyMs: firstTokenMs ?? Math.round(performance.now() - startedAt) };
  } catch (error) {
    const failure = classifyNetworkError(error, signal.timeoutReason);
    if (parentSignal.aborted && !signal.timeoutReason) failure.kind = 'cancelled';
    return fail(failure);
  } finally {
    signal.dispose();
  }
}
