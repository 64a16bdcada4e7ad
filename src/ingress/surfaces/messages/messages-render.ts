import type { ChoiceDelta } from '../../../shared/job.js';
import { toolArgumentsObject } from '../../../shared/internal/tool-arguments.js';
import type { OutputPart } from '../../../shared/internal/parts.js';
import type { CompletionChoice, FinishDetail, FinishReason } from '../../../shared/providers/chat-adapter.js';
import { usageSplit, type Usage } from '../../../shared/usage.js';

// Anthropic's message object and stream events, rendered from internal parts and deltas.

const stopReasons: Record<FinishReason, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
  function_call: 'tool_use',
  error: 'end_turn',
};

export interface StopInfo {
  stop_reason: string;
  stop_sequence: string | null;
}

/** The provider's own reason when it was Anthropic; otherwise the nearest one. */
export function stopInfo(reason: FinishReason | undefined, detail: FinishDetail | undefined): StopInfo {
  if (detail?.wire === 'anthropic') return { stop_reason: detail.reason, stop_sequence: detail.stopSequence ?? null };
  return { stop_reason: stopReasons[reason ?? 'stop'] ?? 'end_turn', stop_sequence: null };
}

/** Anthropic counts cached input apart from input_tokens, where OpenAI's prompt_tokens includes it. */
export function anthropicUsageOf(usage: Usage): Record<string, unknown> {
  const split = usageSplit(usage);
  const body: Record<string, unknown> = {
    input_tokens: Math.max(0, usage.prompt_tokens - split.cacheReadTokens - split.cacheWriteTokens),
    cache_creation_input_tokens: split.cacheWriteTokens,
    cache_read_input_tokens: split.cacheReadTokens,
    output_tokens: usage.completion_tokens,
  };
  // Anthropic's own detail of the writes by TTL, when the provider gave it.
  if (split.cacheWrite1hTokens > 0) body.cache_creation = { ephemeral_5m_input_tokens: split.cacheWriteTokens - split.cacheWrite1hTokens, ephemeral_1h_input_tokens: split.cacheWrite1hTokens };
  if (split.reasoningTokens > 0) body.output_tokens_details = { thinking_tokens: split.reasoningTokens };
  if (usage.cost !== undefined) body.cost = usage.cost;
  return body;
}

function blockOf(part: OutputPart): Record<string, unknown> | undefined {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text, ...part.extras?.anthropic };
    case 'refusal':
      return { type: 'text', text: part.text };
    case 'tool_call':
      return { type: 'tool_use', id: part.id, name: part.name, input: toolArgumentsObject(part.arguments), ...part.extras?.anthropic };
    case 'reasoning':
      return { type: 'thinking', thinking: part.text, signature: part.signature ?? '', ...part.extras?.anthropic };
    case 'redacted_reasoning':
      return { type: 'redacted_thinking', data: part.data, ...part.extras?.anthropic };
    case 'opaque':
      return part.wire === 'anthropic' ? part.value : undefined;
  }
}

export function messageBody(id: string, model: string, choice: CompletionChoice | undefined, usage: Usage): string {
  const content = (choice?.parts ?? []).flatMap((part) => blockOf(part) ?? []);
  return JSON.stringify({
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    ...stopInfo(choice?.finishReason, choice?.finishDetail),
    usage: anthropicUsageOf(usage),
  });
}

function frame(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

type BlockKind = 'text' | 'thinking' | 'tool_use';

/**
 * Opens and closes content blocks as the deltas change kind: reasoning, text and each tool call
 * get blocks of their own, numbered in order. A signature ends its thinking block.
 */
export class MessageStreamRenderer {
  private open: { kind: BlockKind; index: number; toolIndex?: number; signed?: boolean } | undefined;
  private nextIndex = 0;
  private stop: StopInfo | undefined;

  constructor(private readonly id: string, private readonly model: string) {}

  start(): string {
    const message = { id: this.id, type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    return frame('message_start', { message }) + frame('ping', {});
  }

  private close(): string {
    if (!this.open) return '';
    const text = frame('content_block_stop', { index: this.open.index });
    this.open = undefined;
    return text;
  }

  private begin(kind: BlockKind, block: Record<string, unknown>, toolIndex?: number): string {
    const text = this.close();
    this.open = { kind, index: this.nextIndex++, toolIndex };
    return text + frame('content_block_start', { index: this.open.index, content_block: block });
  }

  private delta(delta: Record<string, unknown>): string {
    return frame('content_block_delta', { index: this.open!.index, delta });
  }

  deltas(deltas: ChoiceDelta[]): string {
    let text = '';
    for (const delta of deltas) {
      if (delta.index !== 0) continue;
      if (delta.redactedReasoning !== undefined) {
        text += this.begin('thinking', { type: 'redacted_thinking', data: delta.redactedReasoning }) + this.close();
      }
      if (delta.reasoning !== undefined) {
        if (this.open?.kind !== 'thinking' || this.open.signed) text += this.begin('thinking', { type: 'thinking', thinking: '', signature: '' });
        text += this.delta({ type: 'thinking_delta', thinking: delta.reasoning });
      }
      if (delta.signature !== undefined) {
        if (this.open?.kind !== 'thinking' || this.open.signed) text += this.begin('thinking', { type: 'thinking', thinking: '', signature: '' });
        text += this.delta({ type: 'signature_delta', signature: delta.signature });
        this.open!.signed = true;
      }
      const words = delta.content ?? delta.refusal;
      if (words !== undefined) {
        if (this.open?.kind !== 'text') text += this.begin('text', { type: 'text', text: '' });
        text += this.delta({ type: 'text_delta', text: words });
      }
      for (const call of delta.toolCalls ?? []) {
        if (call.id !== undefined || this.open?.kind !== 'tool_use' || this.open.toolIndex !== call.index) {
          text += this.begin('tool_use', { type: 'tool_use', id: call.id ?? '', name: call.function?.name ?? '', input: {} }, call.index);
        }
        const fragment = call.function?.arguments;
        if (fragment) text += this.delta({ type: 'input_json_delta', partial_json: fragment });
      }
      if (delta.finishReason) {
        text += this.close();
        this.stop = stopInfo(delta.finishReason, delta.finishDetail);
      }
    }
    return text;
  }

  finish(usage: Usage): string {
    const stop = this.stop ?? { stop_reason: 'end_turn', stop_sequence: null };
    return this.close() + frame('message_delta', { delta: stop, usage: anthropicUsageOf(usage) }) + frame('message_stop', {});
  }

  error(type: string, message: string): string {
    return frame('error', { error: { type, message } });
  }
}
