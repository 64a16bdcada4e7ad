import type { OutputPart } from '../../internal/parts.js';
import type { CompletionChoice, FinishReason, NormalizedCompletion } from '../chat-adapter.js';
import { readOpenAiUsage } from './openai-usage.js';

// OpenAI Chat Completions response -> internal choices. `reasoning_content` is the field
// OpenAI-compatible reasoning models (DeepSeek, vLLM's reasoning parsers) put their thinking in.

interface RawToolCall {
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

export function openAiMessageParts(message: Record<string, unknown>): OutputPart[] {
  const parts: OutputPart[] = [];
  if (typeof message.reasoning_content === 'string' && message.reasoning_content !== '') parts.push({ type: 'reasoning', text: message.reasoning_content });
  if (typeof message.content === 'string') parts.push({ type: 'text', text: message.content });
  if (Array.isArray(message.tool_calls)) {
    for (const raw of message.tool_calls as RawToolCall[]) {
      const name = raw.function?.name;
      if (typeof name !== 'string') continue;
      const args = raw.function?.arguments;
      parts.push({ type: 'tool_call', id: typeof raw.id === 'string' ? raw.id : '', name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) });
    }
  }
  if (typeof message.refusal === 'string') parts.push({ type: 'refusal', text: message.refusal });
  return parts;
}

export function parseOpenAiResponse(body: string): NormalizedCompletion {
  const parsed = JSON.parse(body) as { choices?: unknown[]; usage?: unknown; system_fingerprint?: string };
  if (!Array.isArray(parsed.choices)) throw new Error('The provider answered without choices.');
  const choices = parsed.choices.map((raw, position): CompletionChoice => {
    const choice = raw as { index?: number; message?: Record<string, unknown>; finish_reason?: string | null; logprobs?: unknown };
    const reason = choice.finish_reason ?? 'stop';
    const normalized: CompletionChoice = {
      index: typeof choice.index === 'number' ? choice.index : position,
      parts: openAiMessageParts(choice.message ?? {}),
      finishReason: reason as FinishReason,
    };
    if (choice.logprobs != null) normalized.logprobs = choice.logprobs;
    return normalized;
  });
  const completion: NormalizedCompletion = { choices };
  const usage = readOpenAiUsage(parsed.usage);
  if (usage) completion.usage = usage;
  if (typeof parsed.system_fingerprint === 'string') completion.systemFingerprint = parsed.system_fingerprint;
  return completion;
}
