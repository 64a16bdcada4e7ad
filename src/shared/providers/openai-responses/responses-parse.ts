import type { OutputPart } from '../../internal/parts.js';
import type { Usage } from '../../usage.js';
import type { FinishReason, NormalizedCompletion } from '../chat-adapter.js';

// The Responses API's response object and usage in internal terms.

type Json = Record<string, unknown>;

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

export function responsesUsageToInternal(value: unknown): Usage | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const usage = value as Json;
  if (typeof usage.input_tokens !== 'number' || typeof usage.output_tokens !== 'number') return undefined;
  const result: Usage = { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: count(usage.total_tokens) || usage.input_tokens + usage.output_tokens };
  const cached = (usage.input_tokens_details as Json | undefined)?.cached_tokens;
  const written = (usage.input_tokens_details as Json | undefined)?.cache_write_tokens;
  const reasoning = (usage.output_tokens_details as Json | undefined)?.reasoning_tokens;
  if (typeof cached === 'number') result.prompt_tokens_details = { cached_tokens: cached };
  if (typeof written === 'number' && written > 0) result.prompt_tokens_details = { ...result.prompt_tokens_details, cache_creation_tokens: written };
  if (typeof reasoning === 'number') result.completion_tokens_details = { reasoning_tokens: reasoning };
  return result;
}

/** A reasoning item: its summary as text, its encrypted content as the signature that brings it back. */
export function reasoningPart(item: Json): OutputPart | undefined {
  const summary = Array.isArray(item.summary) ? item.summary.map((part) => String((part as Json | null)?.text ?? '')).join('\n') : '';
  const signature = typeof item.encrypted_content === 'string' ? item.encrypted_content : undefined;
  if (!summary && !signature) return undefined;
  return signature ? { type: 'reasoning', text: summary, signature } : { type: 'reasoning', text: summary };
}

export function finishReasonOf(response: Json, sawToolCall: boolean): FinishReason {
  const reason = (response.incomplete_details as Json | null | undefined)?.reason;
  if (reason === 'max_output_tokens') return 'length';
  if (reason === 'content_filter') return 'content_filter';
  return sawToolCall ? 'tool_calls' : 'stop';
}

export function parseResponsesBody(response: Json): NormalizedCompletion {
  const parts: OutputPart[] = [];
  for (const item of (response.output as Json[] | undefined) ?? []) {
    if (item.type === 'message') {
      for (const content of (item.content as Json[] | undefined) ?? []) {
        if (content.type === 'output_text') parts.push({ type: 'text', text: String(content.text ?? '') });
        else if (content.type === 'refusal') parts.push({ type: 'refusal', text: String(content.refusal ?? '') });
      }
    } else if (item.type === 'function_call') {
      parts.push({ type: 'tool_call', id: String(item.call_id ?? ''), name: String(item.name ?? ''), arguments: String(item.arguments ?? '') });
    } else if (item.type === 'reasoning') {
      const part = reasoningPart(item);
      if (part) parts.push(part);
    }
  }
  const completion: NormalizedCompletion = { choices: [{ index: 0, parts, finishReason: finishReasonOf(response, parts.some((part) => part.type === 'tool_call')) }] };
  const usage = responsesUsageToInternal(response.usage);
  if (usage) completion.usage = usage;
  return completion;
}
