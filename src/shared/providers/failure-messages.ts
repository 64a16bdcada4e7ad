import type { FailureKind, StreamPart, StreamTranslator, UpstreamFailure } from './chat-adapter.js';
import { capText, looksLikeHtml, redactSecrets } from './redact.js';

// What a client, the ledger and the logs learn about a provider's failure. Only a provider's 400
// about the request itself (such as "prompt is too long", which clients act on) is the client's to
// read, redacted and capped; every other failure class is our credentials, our provider's outage or
// an HTML page, and answers with a message of ours. The provider's own text is kept as `detail`.

/** Longest provider text a client sees. */
export const clientTextLimit = 500;
/** Longest provider text the ledger and logs keep. */
export const detailTextLimit = 2000;

const ourMessages: Record<FailureKind, string> = {
  rate_limit: "the provider is limiting the gateway's requests",
  overloaded: 'the provider reported that it is overloaded',
  server_error: 'the provider reported an internal error',
  timeout: 'the provider reported a time-out',
  connection: 'the connection to the provider failed',
  bad_request: 'the provider rejected the request without a readable reason',
  auth: "the provider refused the gateway's credentials; the operator must check this provider's API key",
  not_found: 'the provider does not serve the configured upstream model',
  cancelled: 'the provider cancelled the request',
  internal: 'the gateway failed while preparing this attempt or reading its answer',
};

export function ourFailureMessage(kind: FailureKind): string {
  return ourMessages[kind];
}

/** Redacts before the final cap; the first cut only bounds the work the patterns do. */
export function cleaned(text: string, limit: number, secrets: ReadonlyArray<string | undefined>): string {
  return capText(redactSecrets(text.slice(0, limit + 256), secrets), limit);
}

/**
 * Turns a failure whose message came from a provider (an HTTP error body, a mid-stream error event)
 * into one fit for clients; `detail` keeps the provider's text, redacted and truncated.
 */
export function presentProviderFailure(failure: UpstreamFailure, secrets: ReadonlyArray<string | undefined> = []): UpstreamFailure {
  const original = failure.message;
  const readable = original.trim() !== '' && !looksLikeHtml(original);
  const message = failure.kind === 'bad_request' && readable ? cleaned(original, clientTextLimit, secrets) : ourMessages[failure.kind];
  return { ...failure, message, detail: cleaned(original, detailTextLimit, secrets) };
}

/** The detail of any failure as the ledger and logs keep it: redacted and truncated. */
export function failureDetail(failure: UpstreamFailure, secrets: ReadonlyArray<string | undefined> = []): string {
  return failure.detail ?? cleaned(failure.message, detailTextLimit, secrets);
}

/** Passes a stream's parts through, presenting any error event the provider sent mid-stream. */
export function presentingTranslator(translator: StreamTranslator, secrets: ReadonlyArray<string | undefined>): StreamTranslator {
  const present = (parts: StreamPart[]): StreamPart[] =>
    parts.map((part) => (part.type === 'error' ? { type: 'error', failure: presentProviderFailure(part.failure, secrets) } : part));
  const wrapped: StreamTranslator = { push: (event) => present(translator.push(event)) };
  if (translator.finish) wrapped.finish = () => present(translator.finish!());
  return wrapped;
}
