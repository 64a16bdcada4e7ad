import { Readable } from 'node:stream';
import type { ChoiceDelta } from '../shared/job.js';
import type { StreamPart, StreamTranslator, UpstreamFailure } from '../shared/providers/chat-adapter.js';
import { SseDecoder } from '../shared/providers/sse-decoder.js';
import type { JobControl } from '../shared/transport/transport.js';
import type { Usage } from '../shared/usage.js';

// Relays one upstream stream to the job's events as it arrives. The first content or tool-call
// delta (or a finish with none) commits the job to this target, after which nothing falls back.

/**
 * Where relayed deltas go. One sink serves every upstream call of a job's try: when `n` choices are
 * fanned out over several calls, they share it, so the job is committed once, at the first token
 * of whichever call produces one.
 */
export interface StreamSink {
  /** True from the first commit() call: content may be on its way to the client. */
  readonly started: boolean;
  /** Claims the job for this target; false when an earlier run already streamed (nothing may follow). */
  commit(): Promise<boolean>;
  publish(deltas: ChoiceDelta[]): void;
}

export function jobStreamSink(control: JobControl, modelId: string): StreamSink {
  let commitment: Promise<boolean> | undefined;
  return {
    get started() {
      return commitment !== undefined;
    },
    commit() {
      commitment ??= control.claimFirstToken().then((claimed) => {
        if (claimed) control.publish({ type: 'started', model: modelId });
        return claimed;
      });
      return commitment;
    },
    publish(deltas) {
      control.publish({ type: 'deltas', deltas });
    },
  };
}

export interface RelayState {
  /** This stream produced a token (the sink may have started earlier, through another call). */
  started: boolean;
  completionText: string;
  usage?: Usage;
}

export type RelayOutcome = { ok: true } | { ok: false; failure: UpstreamFailure };

export interface RelayOptions {
  /** Rewrites every choice index: a fanned-out call's only choice (0) becomes choice `choiceIndex`. */
  choiceIndex?: number;
  onFirstToken: () => void;
}

function appendDelta(batch: ChoiceDelta[], part: StreamPart & { type: 'delta' }, index: number): void {
  const last = batch[batch.length - 1];
  // Several content fragments of one choice in one network read go out as one chunk.
  if (last && last.index === index && part.content !== undefined && !part.toolCalls && !part.refusal && !part.logprobs && !hasReasoning(part)
    && last.content !== undefined && !last.toolCalls && !last.refusal && !last.logprobs && !last.finishReason && !hasReasoning(last)) {
    last.content += part.content;
    return;
  }
  const delta: ChoiceDelta = { index };
  if (part.reasoning !== undefined) delta.reasoning = part.reasoning;
  if (part.signature !== undefined) delta.signature = part.signature;
  if (part.redactedReasoning !== undefined) delta.redactedReasoning = part.redactedReasoning;
  if (part.content !== undefined) delta.content = part.content;
  if (part.toolCalls) delta.toolCalls = part.toolCalls;
  if (part.refusal !== undefined) delta.refusal = part.refusal;
  if (part.logprobs !== undefined) delta.logprobs = part.logprobs;
  batch.push(delta);
}

function hasReasoning(delta: { reasoning?: string; signature?: string; redactedReasoning?: string }): boolean {
  return delta.reasoning !== undefined || delta.signature !== undefined || delta.redactedReasoning !== undefined;
}

function deltaText(part: StreamPart & { type: 'delta' }): string {
  let text = (part.content ?? part.refusal ?? '') + (part.reasoning ?? '');
  if (part.toolCalls) for (const call of part.toolCalls) text += (call.function?.name ?? '') + (call.function?.arguments ?? '');
  return text;
}

export async function relayStream(body: AsyncIterable<Buffer>, translator: StreamTranslator, sink: StreamSink, state: RelayState, options: RelayOptions): Promise<RelayOutcome> {
  const decoder = new SseDecoder();
  let ended = false;
  let finished = false;

  const handle = async (parts: StreamPart[]): Promise<RelayOutcome | undefined> => {
    const batch: ChoiceDelta[] = [];
    for (const part of parts) {
      if (part.type === 'usage') state.usage = part.usage;
      else if (part.type === 'end') ended = true;
      else if (part.type === 'error') {
        if (batch.length > 0) sink.publish(batch);
        return { ok: false, failure: part.failure };
      } else {
        if (!state.started) {
          state.started = true;
          options.onFirstToken();
          if (!(await sink.commit())) {
            return { ok: false, failure: { kind: 'server_error', message: 'This job already streamed content from a worker that stopped; it is not run twice.' } };
          }
        }
        const index = options.choiceIndex ?? part.index;
        if (part.type === 'delta') {
          state.completionText += deltaText(part);
          appendDelta(batch, part, index);
        } else {
          finished = true;
          batch.push(part.detail ? { index, finishReason: part.finishReason, finishDetail: part.detail } : { index, finishReason: part.finishReason });
        }
      }
    }
    if (batch.length > 0) sink.publish(batch);
    return undefined;
  };

  // A Readable body is iterated without destroy-on-return: leaving for-await early would destroy
  // it with a fresh AbortError (a stack trace, source-mapped under tsx) on every normal stream,
  // because [DONE] is read before the body's end. See releaseBody.
  const readable = body instanceof Readable ? body : undefined;
  try {
    for await (const chunk of readable ? readable.iterator({ destroyOnReturn: false }) : body) {
      for (const event of decoder.push(chunk)) {
        const outcome = await handle(translator.push(event));
        if (outcome) return outcome;
      }
      if (ended) break;
    }
  } finally {
    if (readable) releaseBody(readable, ended);
  }
  const tail: StreamPart[] = [];
  for (const event of decoder.end()) tail.push(...translator.push(event));
  if (translator.finish) tail.push(...translator.finish());
  const outcome = await handle(tail);
  if (outcome) return outcome;
  if (!ended && !state.started) return { ok: false, failure: { kind: 'connection', message: 'The provider closed the stream before sending anything.' } };
  // Some OpenAI-compatible providers close after the finish chunk without sending [DONE].
  if (!ended && !finished) return { ok: false, failure: { kind: 'connection', message: 'The provider closed the stream before it finished.' } };
  return { ok: true };
}

const ignore = () => {};

/**
 * After [DONE] the rest of the body (normally only the end of the chunked encoding, often already
 * received) is read and dropped, which also keeps the connection for the next request; a provider
 * that keeps the stream open after [DONE] is cut off within a second. A body left for any other
 * reason (an error, a failed claim) is destroyed at once, as before.
 */
function releaseBody(body: Readable, ended: boolean): void {
  if (body.readableEnded || body.destroyed) return;
  // Destroying an unfinished body makes it emit an abort error, which nobody else listens for now.
  body.on('error', ignore);
  if (!ended) {
    body.destroy();
    return;
  }
  const timer = setTimeout(() => body.destroy(), 1000).unref();
  body.once('close', () => clearTimeout(timer));
  body.resume();
}
