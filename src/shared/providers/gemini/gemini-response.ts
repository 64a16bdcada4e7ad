import { createHash } from 'node:crypto';
import type { Usage } from '../../usage.js';
import type { OutputPart } from '../../internal/parts.js';
import type { CompletionChoice, FinishReason, NormalizedCompletion } from '../chat-adapter.js';

// Gemini GenerateContentResponse -> internal choices. A streamed event has the same shape,
// so the stream translator reuses these readers.

const finishReasons: Record<string, FinishReason> = {
  STOP: 'stop',
  RECITATION: 'stop',
  OTHER: 'stop',
  // A malformed call produced no usable tool call, so the turn ends as plain text.
  MALFORMED_FUNCTION_CALL: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  LANGUAGE: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};

/** Gemini ends a function call with STOP; OpenAI clients loop on tool_calls, so a call wins. */
export function geminiFinishReason(finishReason: string | undefined, hasFunctionCall: boolean): FinishReason {
  if (hasFunctionCall) return 'tool_calls';
  return (finishReason && finishReasons[finishReason]) || 'stop';
}

export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  cachedContentTokenCount?: number;
  totalTokenCount?: number;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/** Thinking is billed as output, as OpenAI bills reasoning tokens inside completion_tokens. */
export function geminiUsage(raw: GeminiUsageMetadata | undefined): Usage | undefined {
  if (!raw || typeof raw.promptTokenCount !== 'number') return undefined;
  const promptTokens = raw.promptTokenCount + count(raw.toolUsePromptTokenCount);
  const completionTokens = count(raw.candidatesTokenCount) + count(raw.thoughtsTokenCount);
  const usage: Usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  if (typeof raw.cachedContentTokenCount === 'number') usage.prompt_tokens_details = { cached_tokens: raw.cachedContentTokenCount };
  if (typeof raw.thoughtsTokenCount === 'number') usage.completion_tokens_details = { reasoning_tokens: raw.thoughtsTokenCount };
  return usage;
}

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { id?: string; name?: string; args?: unknown };
}

export interface GeminiCandidate {
  index?: number;
  content?: { parts?: GeminiPart[] };
  finishReason?: string;
}

export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsageMetadata;
  responseId?: string;
}

/**
 * The Gemini API leaves function calls without ids, but OpenAI clients answer calls by id. The id
 * is derived from where the call sits rather than drawn at random, so the same response always
 * yields the same ids (replays and tests are reproducible); the response id keeps turns apart.
 */
export function geminiToolCallId(responseId: string | undefined, candidateIndex: number, partPosition: number, name: string): string {
  const digest = createHash('sha256').update(`${responseId ?? ''}\u0000${candidateIndex}\u0000${partPosition}\u0000${name}`).digest('hex');
  return `call_${digest.slice(0, 24)}`;
}

export function functionArguments(args: unknown): string {
  return JSON.stringify(args ?? {});
}

function toChoice(candidate: GeminiCandidate, position: number, responseId: string | undefined): CompletionChoice {
  const index = candidate.index ?? position;
  const parts: OutputPart[] = [];
  let calls = 0;
  (candidate.content?.parts ?? []).forEach((part, partPosition) => {
    if (typeof part.text === 'string') {
      // Thought summaries are the model's reasoning, not its answer.
      const last = parts.at(-1);
      const type = part.thought ? 'reasoning' : 'text';
      if (last && last.type === type) last.text += part.text;
      else parts.push({ type, text: part.text });
    }
    const call = part.functionCall;
    if (call && typeof call.name === 'string') {
      const id = call.id || geminiToolCallId(responseId, index, partPosition, call.name);
      const toolCall: OutputPart = { type: 'tool_call', id, name: call.name, arguments: functionArguments(call.args) };
      // Gemini 3 wants the signature of a call back with it on the next turn.
      if (typeof part.thoughtSignature === 'string') toolCall.extras = { gemini: { thoughtSignature: part.thoughtSignature } };
      parts.push(toolCall);
      calls += 1;
    }
  });
  return { index, parts, finishReason: geminiFinishReason(candidate.finishReason, calls > 0) };
}

export function parseGeminiResponse(body: string): NormalizedCompletion {
  const parsed = JSON.parse(body) as GeminiResponse;
  let choices: CompletionChoice[];
  if (Array.isArray(parsed.candidates) && parsed.candidates.length > 0) {
    choices = parsed.candidates.map((candidate, position) => toChoice(candidate, position, parsed.responseId));
  } else if (parsed.promptFeedback?.blockReason) {
    // A blocked prompt gets no candidates at all; OpenAI reports that as a filtered, empty answer.
    choices = [{ index: 0, parts: [], finishReason: 'content_filter' }];
  } else {
    throw new Error('Gemini answered without candidates.');
  }
  const completion: NormalizedCompletion = { choices };
  const usage = geminiUsage(parsed.usageMetadata);
  if (usage) completion.usage = usage;
  return completion;
}
