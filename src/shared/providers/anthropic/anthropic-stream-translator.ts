import type { SseEvent, StreamPart, StreamTranslator } from '../chat-adapter.js';
import { anthropicStreamFailure } from './anthropic-errors.js';
import { anthropicFinishReason, anthropicUsage, type AnthropicUsage } from './anthropic-response.js';

interface AnthropicStreamEvent {
  type?: string;
  index?: number;
  message?: { usage?: AnthropicUsage };
  content_block?: { type?: string; text?: string; id?: string; name?: string; thinking?: string; signature?: string; data?: string };
  delta?: { type?: string; text?: string; partial_json?: string; thinking?: string; signature?: string; stop_reason?: string | null; stop_sequence?: string | null };
  usage?: AnthropicUsage;
  error?: unknown;
}

interface ToolBlock {
  toolIndex: number;
  argumentsLength: number;
}

/**
 * Turns Anthropic Messages stream events into stream parts. Anthropic numbers content blocks
 * across text and tool_use alike, so tool blocks are renumbered densely as OpenAI tool call indexes.
 * Usage arrives in halves (input on message_start, cumulative output on message_delta) and is
 * reported once, at message_stop.
 */
export class AnthropicStreamTranslator implements StreamTranslator {
  private readonly toolBlocks = new Map<number, ToolBlock>();
  private usage: AnthropicUsage = {};
  private ended = false;
  private outputFinal = false;

  push(event: SseEvent): StreamPart[] {
    let data: AnthropicStreamEvent;
    try {
      data = JSON.parse(event.data);
    } catch {
      return [{ type: 'error', failure: { kind: 'server_error', message: 'Anthropic sent a stream event that is not JSON.' } }];
    }
    switch (data.type ?? event.event) {
      case 'message_start':
        this.mergeUsage(data.message?.usage);
        return [];
      case 'content_block_start':
        return this.blockStart(data);
      case 'content_block_delta':
        return this.blockDelta(data);
      case 'content_block_stop':
        return this.blockStop(data);
      case 'message_delta': {
        this.mergeUsage(data.usage);
        this.outputFinal = true;
        const stopReason = data.delta?.stop_reason;
        if (!stopReason) return [];
        const detail = { wire: 'anthropic' as const, reason: stopReason, stopSequence: data.delta?.stop_sequence ?? null };
        return [{ type: 'finish', index: 0, finishReason: anthropicFinishReason(stopReason), detail }];
      }
      case 'message_stop':
        return this.end();
      case 'error':
        return [{ type: 'error', failure: anthropicStreamFailure(data) }];
      default:
        // ping, and event types added after this was written, carry nothing a client needs.
        return [];
    }
  }

  private mergeUsage(usage: AnthropicUsage | undefined): void {
    if (!usage) return;
    // message_delta counts are cumulative, so the latest value of each field replaces the earlier one.
    for (const key of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const) {
      const value = usage[key];
      if (typeof value === 'number') this.usage[key] = value;
    }
    if (usage.cache_creation) this.usage.cache_creation = usage.cache_creation;
    if (usage.output_tokens_details) this.usage.output_tokens_details = usage.output_tokens_details;
  }

  private blockStart(data: AnthropicStreamEvent): StreamPart[] {
    const block = data.content_block;
    if (block?.type === 'text') return block.text ? [{ type: 'delta', index: 0, content: block.text }] : [];
    if (block?.type === 'thinking') return block.thinking ? [{ type: 'delta', index: 0, reasoning: block.thinking }] : [];
    if (block?.type === 'redacted_thinking') return typeof block.data === 'string' ? [{ type: 'delta', index: 0, redactedReasoning: block.data }] : [];
    if (block?.type !== 'tool_use' || typeof data.index !== 'number') return [];
    const toolIndex = this.toolBlocks.size;
    this.toolBlocks.set(data.index, { toolIndex, argumentsLength: 0 });
    // content_block.input is always an empty placeholder; the real input follows as input_json_delta.
    return [{ type: 'delta', index: 0, toolCalls: [{ index: toolIndex, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] }];
  }

  private blockDelta(data: AnthropicStreamEvent): StreamPart[] {
    const delta = data.delta;
    if (delta?.type === 'text_delta') return delta.text ? [{ type: 'delta', index: 0, content: delta.text }] : [];
    if (delta?.type === 'thinking_delta') return delta.thinking ? [{ type: 'delta', index: 0, reasoning: delta.thinking }] : [];
    if (delta?.type === 'signature_delta') return typeof delta.signature === 'string' ? [{ type: 'delta', index: 0, signature: delta.signature }] : [];
    if (delta?.type !== 'input_json_delta' || !delta.partial_json) return [];
    const tool = typeof data.index === 'number' ? this.toolBlocks.get(data.index) : undefined;
    if (!tool) return [];
    tool.argumentsLength += delta.partial_json.length;
    return [{ type: 'delta', index: 0, toolCalls: [{ index: tool.toolIndex, function: { arguments: delta.partial_json } }] }];
  }

  private blockStop(data: AnthropicStreamEvent): StreamPart[] {
    const tool = typeof data.index === 'number' ? this.toolBlocks.get(data.index) : undefined;
    // A tool called without arguments streams no JSON at all; clients still expect parseable arguments.
    if (!tool || tool.argumentsLength > 0) return [];
    tool.argumentsLength = 2;
    return [{ type: 'delta', index: 0, toolCalls: [{ index: tool.toolIndex, function: { arguments: '{}' } }] }];
  }

  /**
   * The body ended without message_stop, so no end part: the worker reports the cut. Usage is
   * still passed on once message_delta has given the final output count; before that the count
   * is message_start's placeholder and the worker's estimate is better.
   */
  finish(): StreamPart[] {
    if (this.ended) return [];
    this.ended = true;
    const usage = this.outputFinal ? anthropicUsage(this.usage) : undefined;
    return usage ? [{ type: 'usage', usage }] : [];
  }

  private end(): StreamPart[] {
    if (this.ended) return [];
    this.ended = true;
    const usage = anthropicUsage(this.usage);
    return usage ? [{ type: 'usage', usage }, { type: 'end' }] : [{ type: 'end' }];
  }
}
