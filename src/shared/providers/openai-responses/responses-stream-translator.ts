import type { FailureKind, SseEvent, StreamPart, StreamTranslator } from '../chat-adapter.js';
import { finishReasonOf, responsesUsageToInternal } from './responses-parse.js';

// The Responses API's stream events as stream parts: text, refusal and reasoning-summary deltas,
// function calls (numbered in the order their items open), the encrypted reasoning of a finished
// reasoning item (as the signature that lets it be sent back), and the usage and finish of
// response.completed / response.incomplete. Items of hosted tools have no internal counterpart.

type Json = Record<string, unknown>;

const failureKinds: Record<string, FailureKind> = {
  rate_limit_exceeded: 'rate_limit',
  insufficient_quota: 'rate_limit',
  server_error: 'server_error',
  server_is_overloaded: 'overloaded',
  slow_down: 'overloaded',
};

function failure(error: Json | undefined, fallback: string): StreamPart {
  const code = typeof error?.code === 'string' ? error.code : '';
  const message = typeof error?.message === 'string' ? error.message : fallback;
  return { type: 'error', failure: { kind: failureKinds[code] ?? 'server_error', message } };
}

export class ResponsesStreamTranslator implements StreamTranslator {
  private readonly toolIndexes = new Map<string, number>();

  push(event: SseEvent): StreamPart[] {
    if (event.data === '[DONE]') return [{ type: 'end' }];
    let data: Json;
    try {
      data = JSON.parse(event.data) as Json;
    } catch {
      return [{ type: 'error', failure: { kind: 'server_error', message: 'The provider sent a stream event that is not JSON.' } }];
    }
    const delta = typeof data.delta === 'string' ? data.delta : '';
    const item = data.item as Json | undefined;
    switch (data.type) {
      case 'response.output_text.delta':
        return delta ? [{ type: 'delta', index: 0, content: delta }] : [];
      case 'response.refusal.delta':
        return delta ? [{ type: 'delta', index: 0, refusal: delta }] : [];
      case 'response.reasoning_summary_text.delta':
        return delta ? [{ type: 'delta', index: 0, reasoning: delta }] : [];
      case 'response.output_item.added': {
        if (item?.type !== 'function_call') return [];
        const index = this.toolIndexes.size;
        this.toolIndexes.set(String(item.id), index);
        const args = typeof item.arguments === 'string' ? item.arguments : '';
        return [{ type: 'delta', index: 0, toolCalls: [{ index, id: String(item.call_id ?? item.id), type: 'function', function: { name: String(item.name ?? ''), arguments: args } }] }];
      }
      case 'response.function_call_arguments.delta': {
        const index = this.toolIndexes.get(String(data.item_id));
        return index === undefined || !delta ? [] : [{ type: 'delta', index: 0, toolCalls: [{ index, function: { arguments: delta } }] }];
      }
      case 'response.output_item.done':
        return item?.type === 'reasoning' && typeof item.encrypted_content === 'string' ? [{ type: 'delta', index: 0, signature: item.encrypted_content }] : [];
      case 'response.completed':
      case 'response.incomplete': {
        const response = (data.response as Json | undefined) ?? {};
        const parts: StreamPart[] = [{ type: 'finish', index: 0, finishReason: finishReasonOf(response, this.toolIndexes.size > 0) }];
        const usage = responsesUsageToInternal(response.usage);
        if (usage) parts.push({ type: 'usage', usage });
        parts.push({ type: 'end' });
        return parts;
      }
      case 'response.failed':
        return [failure((data.response as Json | undefined)?.error as Json | undefined, 'The provider failed the response.')];
      case 'error':
        return [failure((data.error as Json | undefined) ?? data, 'The provider reported an error mid-stream.')];
      default:
        return [];
    }
  }
}
