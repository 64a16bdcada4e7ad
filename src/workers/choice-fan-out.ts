import type { InternalRequest } from '../shared/internal/request.js';
import type { ProviderAdapter } from '../shared/providers/provider-adapter.js';
import { countPromptTokens, countTextTokens } from '../shared/token-counter.js';
import { makeUsage, type Usage } from '../shared/usage.js';
import { jobStreamSink } from './stream-relay.js';
import { runAttempt, type AttemptInput, type AttemptResult } from './target-attempt.js';

// `n` > 1 on a provider that produces one choice per call (Anthropic): n calls run side by side and
// call i answers choice i. To the fallback chain the n calls are one try of one deployment:
//   - streams interleave as the calls produce them, each call's choice 0 renumbered to i;
//   - before the first token of any call, one call failing fails the try (the others are stopped)
//     and the chain moves on as for a single call; after it, a failure ends the stream with the
//     error chunk, again stopping the others;
//   - usage is the sum over the calls, since each one was billed by the provider.

export function needsFanOut(request: InternalRequest, adapter: ProviderAdapter): boolean {
  return request.n > 1 && !adapter.supportsMultipleChoices;
}

export async function runFanOut(input: AttemptInput): Promise<AttemptResult> {
  const count = input.request.n;
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
      Array.from({ length: count }, async (_, index) => {
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

/**
 * The sum of every call's usage. A call whose provider reported none (a stream cut short) is
 * counted with the tokenizer, so the total is complete and marked estimated; a call that failed
 * without producing anything is not counted.
 */
function totalUsage(request: InternalRequest, results: AttemptResult[]): Usage {
  let prompt = 0;
  let completion = 0;
  let estimated = false;
  let cached = 0;
  let reasoning = 0;
  for (const result of results) {
    if (!result.usage && !result.ok && result.completionText === '') continue;
    const usage = result.usage ?? makeUsage(countPromptTokens(request), countTextTokens(result.completionText), true);
    prompt += usage.prompt_tokens;
    completion += usage.completion_tokens;
    estimated ||= usage.estimated === true;
    cached += numberOf(usage.prompt_tokens_details?.cached_tokens);
    reasoning += numberOf(usage.completion_tokens_details?.reasoning_tokens);
  }
  const usage = makeUsage(prompt, completion, estimated);
  if (cached > 0) usage.prompt_tokens_details = { cached_tokens: cached };
  if (reasoning > 0) usage.completion_tokens_details = { reasoning_tokens: reasoning };
  return usage;
}

function numberOf(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}
