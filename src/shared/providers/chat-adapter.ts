import type { ProviderConfig } from '../catalog/catalog-types.js';
import type { OutputPart, WireFormat } from '../internal/parts.js';
import type { InternalRequest } from '../internal/request.js';
import type { Usage } from '../usage.js';

// Adapters translate between the gateway's internal format (src/shared/internal) and one
// provider's wire format. They never perform I/O: the worker's provider client sends what they
// build and feeds them what comes back.

export interface ProviderHttpRequest {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
}

export interface AdapterContext {
  provider: ProviderConfig;
  upstreamModel: string;
  stream: boolean;
  /** The model's own output ceiling, for formats where max_tokens is required. */
  maxOutputTokens?: number;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call' | 'error';

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** The provider's own stop reason, for a client that speaks the same format. */
export interface FinishDetail {
  wire: WireFormat;
  reason: string;
  stopSequence?: string | null;
}

/** One whole answer: its parts in the order the model produced them. */
export interface CompletionChoice {
  index: number;
  parts: OutputPart[];
  finishReason: FinishReason;
  finishDetail?: FinishDetail;
  logprobs?: unknown;
}

export interface NormalizedCompletion {
  choices: CompletionChoice[];
  /** Absent when the provider did not report usage; the worker then estimates it. */
  usage?: Usage;
  systemFingerprint?: string;
}

/** One piece of a translated stream. `delta` parts with content or tool calls are "tokens". */
export type StreamPart =
  | StreamDeltaPart
  | { type: 'finish'; index: number; finishReason: FinishReason; detail?: FinishDetail }
  | { type: 'usage'; usage: Usage }
  | { type: 'error'; failure: UpstreamFailure }
  | { type: 'end' };

/**
 * New output of one choice. Reasoning arrives as text and ends with its signature; a signature or a
 * redacted block closes a reasoning block, so two blocks in a row stay apart.
 */
export interface StreamDeltaPart {
  type: 'delta';
  index: number;
  content?: string;
  toolCalls?: ToolCallDelta[];
  refusal?: string;
  logprobs?: unknown;
  reasoning?: string;
  signature?: string;
  redactedReasoning?: string;
}

export interface SseEvent {
  event?: string;
  data: string;
}

export interface StreamTranslator {
  /** Translates one decoded server-sent event into zero or more stream parts. */
  push(event: SseEvent): StreamPart[];
  /**
   * Called by the worker once the upstream body has ended. Formats without an end-of-stream
   * event (Gemini sends no [DONE]) return their closing parts here; others need not implement it.
   */
  finish?(): StreamPart[];
}

/**
 * What went wrong upstream, classified so the fallback chain can decide: rate_limit, overloaded,
 * server_error, timeout and connection move on to the next target; the others do not. `internal` is
 * the gateway's own failure (building the request, an exception of ours): it never counts against a
 * deployment and never falls back.
 */
export type FailureKind = 'rate_limit' | 'overloaded' | 'server_error' | 'timeout' | 'connection' | 'bad_request' | 'auth' | 'not_found' | 'cancelled' | 'internal';

export interface UpstreamFailure {
  kind: FailureKind;
  status?: number;
  /** Safe for clients: ours, or a provider's 400 text redacted and capped (see failure-messages.ts). */
  message: string;
  /** The provider's own text, redacted and truncated, for the ledger and logs only. */
  detail?: string;
  retryAfterSeconds?: number;
}

export const fallbackableKinds: ReadonlySet<FailureKind> = new Set(['rate_limit', 'overloaded', 'server_error', 'timeout', 'connection']);

/**
 * The output ceiling to send: the client's own when the target speaks its format (the provider
 * enforces its limits as the client expects), else capped by the catalog's limit for the model, so
 * that a translated request (Claude Code's max_tokens of 64,000 sent to an OpenAI-format model)
 * is not refused for a ceiling the client never chose for that model.
 */
export function outputCeiling(request: InternalRequest, context: AdapterContext, sameWire: boolean): number | undefined {
  const asked = request.maxOutputTokens;
  if (asked === undefined || sameWire || context.maxOutputTokens === undefined) return asked;
  return Math.min(asked, context.maxOutputTokens);
}

export interface ChatAdapter {
  /** Whether one upstream call can produce `n` > 1 choices. */
  readonly supportsMultipleChoices: boolean;
  buildRequest(request: InternalRequest, context: AdapterContext): ProviderHttpRequest;
  parseResponse(body: string, context: AdapterContext): NormalizedCompletion;
  createStreamTranslator(context: AdapterContext): StreamTranslator;
  parseError(status: number, headers: Record<string, string>, body: string): UpstreamFailure;
}
