import type { InternalRequest } from '../shared/internal/request.js';
import type { ChoiceDelta } from '../shared/job.js';
import type { ChatAdapter } from '../shared/providers/chat-adapter.js';
import { countPromptTokens, countTextTokens } from '../shared/token-counter.js';
import { makeUsage, usageSplit, withSplit, type Usage, type UsageSplit } from '../shared/usage.js';
import type { ProviderCallBudget } from './provider-call-budget.js';
import { jobStreamSink, type StreamSink } from './stream-relay.js';
import { runAttempt, type AttemptInput, type AttemptResult } from './target-attempt.js';

// `n` > 1 where one call does not give n choices:
//   - a provider that produces one choice per call (Anthropic): n calls run side by side and call i
//     answers choice i (a fan-out);
//   - a provider that takes `n` but ignores it (some OpenAI-compatible servers): the choices that
//     did not come are filled in by one call each, so the client gets the n choices it asked for
//     (and, streaming, every choice the ingress opened is finished).
// To the fallback chain all of it is one try of one deployment:
//   - streams interleave as the calls produce them, each call's choice 0 renumbered to its index;
//   - before the first token of any call, one call failing fails the try (the others are stopped)
//     and the chain moves on as for a single call; after it, a failure ends the stream with the
//     error chunk, again stopping the others;
//   - usage is the sum over the calls, since each one was billed by the provider.

export function needsFanOut(request: InternalRequest, adapter: ChatAdapter): boolean {
  return request.n > 1 && !adapter.supportsMultipleChoices;
}

/** Runs one try of one deployment with every choice the request asks for, within the call budget. */
export async function runChoices(input: AttemptInput, budget: ProviderCallBudget): Promise<AttemptResult> {
  const count = input.request.n;
  if (needsFanOut(input.request, input.adapter)) return runCalls(input, range(0, count));
  if (count === 1) return runAttempt(input);
  const finished = new Set<number>();
  const sink = trackingSink(input.sink ?? jobStreamSink(input.control, input.model.id), finished);
  const first = await runAttempt({ ...input, sink });
  if (!first.ok) return first;
  const present = input.stream ? finished : new Set((first.choices ?? []).map((choice) => choice.index));
  const missing = range(0, count).filter((index) => !present.has(index));
  if (missing.length === 0) return first;
  if (!budget.take(missing.length)) {
    // No calls left to fill them in: the choices that came are the answer, and every opened one ends.
    if (input.stream) sink.publish(missing.map((index): ChoiceDelta => ({ index, finishReason: 'stop' })));
    return first;
  }
  const filled = await runCalls({ ...input, sink }, missing);
  const usage = totalUsage(input.request, [first, filled]);
  const completionText = first.completionText + filled.completionText;
  if (!filled.ok) {
    // Streaming, the client already has content: the failure ends the stream. Otherwise the
    // choices that came are still a complete answer.
    if (input.stream) return { ...filled, started: true, usage, completionText };
    return { ...first, usage, completionText };
  }
  const choices = input.stream ? undefined : [...(first.choices ?? []), ...(filled.choices ?? [])].sort((a, b) => a.index - b.index);
  return { ...first, usage, completionText, choices };
}

/** One single-choice call per index, side by side; the first failure stops the others. */
async function runCalls(input: AttemptInput, indices: number[]): Promise<AttemptResult> {
  const single: InternalRequest = { ...input.request, n: 1 };
  const parent = input.signal ?? input.control.signal;
  const calls = new AbortController();
  const stopCalls = () => calls.abort();
  if (parent.aborted) calls.abort();
  else parent.addEventListener('abort', stopCalls, { once: true });
  const sink = input.sink ?? jobStreamSink(input.control, input.model.id);
  let firstFailure: (AttemptResult & { ok: false }) | undefined;
  try {
    const results = await Promise.all(
      indices.map(async (index) => {
        const result = await runAttempt({ ...input, request: single, signal: calls.signal, sink, choiceIndex: index });
        // Later failures are mostly the other calls reporting that they were stopped; the first one is the cause.
        if (!result.ok && !firstFailure) {
          firstFailure = result;
          calls.abort();
        }
        return result;
      }),
    );
    const usage = totalUsage(single, results);
    const completionText = results.map((result) => result.completionText).join('');
    if (firstFailure) return { ...firstFailure, started: sink.started, usage, completionText };
    const succeeded = results as Array<AttemptResult & { ok: true }>;
    const latencies = succeeded.map((result) => result.latencyMs);
    return {
      ok: true,
      usage,
      completionText,
      choices: input.stream ? undefined : succeeded.flatMap((result) => result.choices ?? []),
      systemFingerprint: succeeded.find((result) => result.systemFingerprint)?.systemFingerprint,
      // A stream is as fast as its first token; a whole answer is ready when its slowest call is.
      latencyMs: input.stream ? Math.min(...latencies) : Math.max(...latencies),
    };
  } finally {
    parent.removeEventListener('abort', stopCalls);
  }
}

/** Forwards to `sink` and notes which choices a finish has gone out for. */
function trackingSink(sink: StreamSink, finished: Set<number>): StreamSink {
  return {
    get started() {
      return sink.started;
    },
    commit: () => sink.commit(),
    publish(deltas) {
      for (const delta of deltas) if (delta.finishReason !== undefined) finished.add(delta.index);
      sink.publish(deltas);
    },
  };
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, offset) => from + offset);
}

/**
 * The sum of every call's usage. A call whose provider reported none (a stream cut short) is
 * counted with the tokenizer, so the total is complete and marked estimated; a call that failed
 * without producing anything is not counted.
 */
function totalUsage(request: InternalRequest, results: AttemptResult[]): Usage {
  let prompt = 0;
  let completion = 0;
  let estimated = false;
  const split: UsageSplit = { cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, reasoningTokens: 0 };
  for (const result of results) {
    if (!result.usage && !result.ok && result.completionText === '') continue;
    const usage = result.usage ?? makeUsage(countPromptTokens(request, 'estimate'), countTextTokens(result.completionText), true);
    prompt += usage.prompt_tokens;
    completion += usage.completion_tokens;
    estimated ||= usage.estimated === true;
    // Each call's cache and reasoning split is billed too, so the sum keeps every part of it.
    const part = usageSplit(usage);
    for (const field of Object.keys(split) as (keyof UsageSplit)[]) split[field] += part[field];
  }
  return withSplit(makeUsage(prompt, completion, estimated), split);
}
