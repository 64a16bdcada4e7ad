import type { ModelEntry, ProviderConfig } from '../shared/catalog/catalog-types.js';
import type { ChatRequest } from '../shared/chat-request-schema.js';
import type { ChoiceDelta } from '../shared/job.js';
import type { AdapterContext, CompletionChoice, ProviderAdapter, StreamPart, UpstreamFailure } from '../shared/providers/provider-adapter.js';
import { SseDecoder } from '../shared/providers/sse-decoder.js';
import type { JobControl } from '../shared/transport/transport.js';
import type { Usage } from '../shared/usage.js';
import { classifyNetworkError, type ProviderClient } from './provider-client.js';

// One try of one target. Streams are relayed as they arrive; the first content or tool-call delta
// (or a finish with none) commits the job to this target, after which nothing falls back.

export interface AttemptInput {
  request: ChatRequest;
  stream: boolean;
  model: ModelEntry;
  provider: ProviderConfig;
  adapter: ProviderAdapter;
  client: ProviderClient;
  control: JobControl;
}

export type AttemptResult =
  | { ok: true; usage?: Usage; completionText: string; choices?: CompletionChoice[]; systemFingerprint?: string }
  | { ok: false; failure: UpstreamFailure; started: boolean; usage?: Usage; completionText: string };

/** Combines the job's cancellation with this attempt's own timers. */
class AttemptSignal {
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

function appendDelta(batch: ChoiceDelta[], part: StreamPart & { type: 'delta' }): void {
  const last = batch[batch.length - 1];
  // Several content fragments of one choice in one network read go out as one chunk.
  if (last && last.index === part.index && part.content !== undefined && !part.toolCalls && !part.refusal && !part.logprobs
    && last.content !== undefined && !last.toolCalls && !last.refusal && !last.logprobs && !last.finishReason) {
    last.content += part.content;
    return;
  }
  const delta: ChoiceDelta = { index: part.index };
  if (part.content !== undefined) delta.content = part.content;
  if (part.toolCalls) delta.toolCalls = part.toolCalls;
  if (part.refusal !== undefined) delta.refusal = part.refusal;
  if (part.logprobs !== undefined) delta.logprobs = part.logprobs;
  batch.push(delta);
}

function deltaText(part: StreamPart & { type: 'delta' }): string {
  let text = part.content ?? part.refusal ?? '';
  if (part.toolCalls) for (const call of part.toolCalls) text += (call.function?.name ?? '') + (call.function?.arguments ?? '');
  return text;
}

function choicesText(choices: CompletionChoice[]): string {
  let text = '';
  for (const choice of choices) {
    text += choice.message.content ?? '';
    for (const call of choice.message.tool_calls ?? []) text += call.function.name + call.function.arguments;
  }
  return text;
}

export async function runAttempt(input: AttemptInput): Promise<AttemptResult> {
  const { provider, model, adapter, control } = input;
  const context: AdapterContext = { provider, upstreamModel: model.upstreamModel, stream: input.stream, maxOutputTokens: model.maxOutputTokens };
  const signal = new AttemptSignal(control.signal);
  signal.arm(provider.timeouts.totalMs, `The provider did not finish within ${provider.timeouts.totalMs} ms.`);
  const state = { started: false, completionText: '', usage: undefined as Usage | undefined };
  try {
    const httpRequest = adapter.buildRequest(input.request, context);
    const firstTokenTimer = input.stream ? signal.arm(provider.timeouts.firstTokenMs, `No first token within ${provider.timeouts.firstTokenMs} ms.`) : undefined;
    const response = await input.client.send(httpRequest, provider, signal.controller.signal, {
      headersTimeoutMs: input.stream ? provider.timeouts.firstTokenMs : provider.timeouts.totalMs,
      bodyIdleTimeoutMs: input.stream ? provider.timeouts.firstTokenMs : provider.timeouts.totalMs,
    });
    if (response.status !== 200) {
      const text = await response.body.text();
      return { ok: false, failure: adapter.parseError(response.status, response.headers, text), started: false, completionText: '' };
    }
    if (!input.stream) {
      const completion = adapter.parseResponse(await response.body.text(), context);
      return { ok: true, usage: completion.usage, completionText: choicesText(completion.choices), choices: completion.choices, systemFingerprint: completion.systemFingerprint };
    }
    return await relayStream(response.body, adapter, context, model.id, control, state, () => clearTimeout(firstTokenTimer));
  } catch (error) {
    const failure = classifyNetworkError(error, signal.timeoutReason);
    if (control.signal.aborted && !signal.timeoutReason) failure.kind = 'cancelled';
    return { ok: false, failure, started: state.started, usage: state.usage, completionText: state.completionText };
  } finally {
    signal.dispose();
  }
}

async function relayStream(
  body: AsyncIterable<Buffer>,
  adapter: ProviderAdapter,
  context: AdapterContext,
  modelId: string,
  control: JobControl,
  state: { started: boolean; completionText: string; usage?: Usage },
  onFirstToken: () => void,
): Promise<AttemptResult> {
  const decoder = new SseDecoder();
  const translator = adapter.createStreamTranslator(context);
  let ended = false;
  let finished = false;

  const handle = async (parts: StreamPart[]): Promise<AttemptResult | undefined> => {
    const batch: ChoiceDelta[] = [];
    for (const part of parts) {
      if (part.type === 'usage') state.usage = part.usage;
      else if (part.type === 'end') ended = true;
      else if (part.type === 'error') {
        if (batch.length > 0) control.publish({ type: 'deltas', deltas: batch });
        return { ok: false, failure: part.failure, started: state.started, usage: state.usage, completionText: state.completionText };
      } else {
        if (!state.started) {
          if (!(await control.claimFirstToken())) {
            return { ok: false, failure: { kind: 'server_error', message: 'This job already streamed content from a worker that stopped; it is not run twice.' }, started: true, completionText: '' };
          }
          state.started = true;
          onFirstToken();
          control.publish({ type: 'started', model: modelId });
        }
        if (part.type === 'delta') {
          state.completionText += deltaText(part);
          appendDelta(batch, part);
        } else {
          finished = true;
          batch.push({ index: part.index, finishReason: part.finishReason });
        }
      }
    }
    if (batch.length > 0) control.publish({ type: 'deltas', deltas: batch });
    return undefined;
  };

  for await (const chunk of body) {
    for (const event of decoder.push(chunk)) {
      const outcome = await handle(translator.push(event));
      if (outcome) return outcome;
    }
    if (ended) break;
  }
  const tail: StreamPart[] = [];
  for (const event of decoder.end()) tail.push(...translator.push(event));
  if (translator.finish) tail.push(...translator.finish());
  const outcome = await handle(tail);
  if (outcome) return outcome;
  if (!ended && !state.started) {
    return { ok: false, failure: { kind: 'connection', message: 'The provider closed the stream before sending anything.' }, started: false, completionText: '' };
  }
  // Some OpenAI-compatible providers close after the finish chunk without sending [DONE].
  if (!ended && !finished) {
    return { ok: false, failure: { kind: 'connection', message: 'The provider closed the stream before it finished.' }, started: true, usage: state.usage, completionText: state.completionText };
  }
  return { ok: true, usage: state.usage, completionText: state.completionText };
}
