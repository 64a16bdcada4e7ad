import type { FinishReason, SseEvent, StreamPart, StreamTranslator, ToolCallDelta } from '../chat-adapter.js';
import { readOpenAiUsage } from './openai-usage.js';

interface RawToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface RawChoice {
  index?: number;
  delta?: { content?: string | null; tool_calls?: RawToolCallDelta[]; refusal?: string | null; reasoning_content?: string | null };
  finish_reason?: string | null;
  logprobs?: unknown;
}

/**
 * Turns OpenAI-format chunks into stream parts. Compatible providers differ in small ways (tool
 * call indexes starting at 1, continuation deltas repeating an empty id, usage on the finish
 * chunk), so tool call indexes are renumbered densely per choice and empty fields dropped.
 */
export class OpenAiStreamTranslator implements StreamTranslator {
  private readonly toolIndexes = new Map<number, Map<number, number>>();

  push(event: SseEvent): StreamPart[] {
    if (event.data === '[DONE]') return [{ type: 'end' }];
    let chunk: { choices?: RawChoice[]; usage?: unknown; error?: { message?: string; code?: unknown; type?: string } };
    try {
      chunk = JSON.parse(event.data);
    } catch {
      return [{ type: 'error', failure: { kind: 'server_error', message: 'The provider sent a stream event that is not JSON.' } }];
    }
    if (chunk.error) {
      const message = typeof chunk.error.message === 'string' ? chunk.error.message : 'The provider reported an error mid-stream.';
      return [{ type: 'error', failure: { kind: 'server_error', message } }];
    }
    const parts: StreamPart[] = [];
    for (const choice of chunk.choices ?? []) this.translateChoice(choice, parts);
    const usage = readOpenAiUsage(chunk.usage);
    if (usage) parts.push({ type: 'usage', usage });
    return parts;
  }

  private translateChoice(choice: RawChoice, parts: StreamPart[]): void {
    const index = choice.index ?? 0;
    const delta = choice.delta;
    if (delta) {
      const toolCalls = delta.tool_calls ? this.translateToolCalls(index, delta.tool_calls) : undefined;
      const hasContent = typeof delta.content === 'string' && delta.content.length > 0;
      const hasRefusal = typeof delta.refusal === 'string' && delta.refusal.length > 0;
      // reasoning_content: the thinking of OpenAI-compatible reasoning models (DeepSeek, vLLM).
      if (typeof delta.reasoning_content === 'string' && delta.reasoning_content.length > 0) parts.push({ type: 'delta', index, reasoning: delta.reasoning_content });
      if (hasContent || hasRefusal || (toolCalls && toolCalls.length > 0)) {
        const part: StreamPart & { type: 'delta' } = { type: 'delta', index };
        if (hasContent) part.content = delta.content!;
        if (hasRefusal) part.refusal = delta.refusal!;
        if (toolCalls && toolCalls.length > 0) part.toolCalls = toolCalls;
        if (choice.logprobs != null) part.logprobs = choice.logprobs;
        parts.push(part);
      }
    }
    if (choice.finish_reason) parts.push({ type: 'finish', index, finishReason: choice.finish_reason as FinishReason });
  }

  private translateToolCalls(choiceIndex: number, raw: RawToolCallDelta[]): ToolCallDelta[] {
    let indexes = this.toolIndexes.get(choiceIndex);
    if (!indexes) {
      indexes = new Map();
      this.toolIndexes.set(choiceIndex, indexes);
    }
    const result: ToolCallDelta[] = [];
    for (const call of raw) {
      const upstreamIndex = call.index ?? 0;
      let index = indexes.get(upstreamIndex);
      const isNew = index === undefined;
      if (index === undefined) {
        index = indexes.size;
        indexes.set(upstreamIndex, index);
      }
      const delta: ToolCallDelta = { index };
      if (call.id) delta.id = call.id;
      if (isNew || call.id) delta.type = 'function';
      const name = call.function?.name;
      const fragment = call.function?.arguments;
      if (name || isNew || (fragment !== undefined && fragment !== '')) {
        delta.function = {};
        if (name) delta.function.name = name;
        if (fragment !== undefined && (fragment !== '' || isNew)) delta.function.arguments = fragment;
      }
      if (!isNew && !delta.id && !delta.function) continue;
      result.push(delta);
    }
    return result;
  }
}
