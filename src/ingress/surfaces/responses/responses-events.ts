import type { ErrorDescription } from '../../../shared/errors.js';
import { errorFromDescription } from '../../../shared/errors.js';
import type { ChoiceDelta } from '../../../shared/job.js';
import type { FinishReason } from '../../../shared/providers/chat-adapter.js';
import type { LoggedEvent } from '../../../shared/responses/response-event-log.js';
import type { Usage } from '../../../shared/usage.js';
import { itemId, responseObject, responsesUsage, type ResponseShell } from './responses-object.js';

// Job events as the Responses stream, in OpenAI's published order: response.created and
// response.in_progress, then per output item output_item.added, its parts and deltas, their .done
// events and output_item.done, and a terminal response.completed / incomplete / failed. Every event
// gets the next sequence_number. The same builder makes the response object of a non-streamed
// request, so streamed and non-streamed answers cannot differ.

type Json = Record<string, unknown>;

interface OpenItem {
  kind: 'message' | 'function_call' | 'reasoning';
  index: number;
  item: Json;
  text: string;
  toolIndex?: number;
  /** A reasoning item's summary part was announced. */
  partOpen?: boolean;
}

export class ResponseEventBuilder {
  private seq = 0;
  private readonly output: Json[] = [];
  private open: OpenItem | undefined;
  private finishReason: FinishReason | undefined;
  private inProgressSent = false;
  status = 'queued';
  final: Json | undefined;

  constructor(private readonly shell: ResponseShell) {}

  private event(type: string, fields: Json): LoggedEvent {
    const seq = this.seq++;
    return { seq, type, data: JSON.stringify({ type, sequence_number: seq, ...fields }) };
  }

  snapshot(status = this.status, extra: Json = {}): Json {
    const output = this.open ? [...this.output, this.partialItem(this.open)] : [...this.output];
    return responseObject(this.shell, status, output, extra);
  }

  /** An item still being generated, with what it holds so far. */
  private partialItem(open: OpenItem): Json {
    if (open.kind === 'message') return { ...open.item, content: [{ type: 'output_text', text: open.text, annotations: [], logprobs: [] }] };
    if (open.kind === 'function_call') return { ...open.item, arguments: open.text };
    return open.partOpen ? { ...open.item, summary: [{ type: 'summary_text', text: open.text }] } : { ...open.item };
  }

  /** The opening events; a background response starts queued. */
  start(background: boolean): LoggedEvent[] {
    this.status = background ? 'queued' : 'in_progress';
    const events = [this.event('response.created', { response: this.snapshot() })];
    if (background) events.push(this.event('response.queued', { response: this.snapshot() }));
    return events;
  }

  /** The job reached a worker. */
  running(): LoggedEvent[] {
    // A job picked up again after its worker died is accepted twice; the stream says it once.
    if (this.inProgressSent || this.final) return [];
    this.inProgressSent = true;
    this.status = 'in_progress';
    return [this.event('response.in_progress', { response: this.snapshot() })];
  }

  private close(): LoggedEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    const events: LoggedEvent[] = [];
    const base = { item_id: open.item.id, output_index: open.index };
    if (open.kind === 'message') {
      const part = { type: 'output_text', text: open.text, annotations: [], logprobs: [] };
      open.item.content = [part];
      open.item.status = 'completed';
      events.push(this.event('response.output_text.done', { ...base, content_index: 0, text: open.text, logprobs: [] }));
      events.push(this.event('response.content_part.done', { ...base, content_index: 0, part }));
    } else if (open.kind === 'function_call') {
      open.item.arguments = open.text;
      open.item.status = 'completed';
      events.push(this.event('response.function_call_arguments.done', { ...base, name: open.item.name, arguments: open.text }));
    } else if (open.partOpen) {
      const part = { type: 'summary_text', text: open.text };
      open.item.summary = [part];
      events.push(this.event('response.reasoning_summary_text.done', { ...base, summary_index: 0, text: open.text }));
      events.push(this.event('response.reasoning_summary_part.done', { ...base, summary_index: 0, part }));
    }
    this.output.push(open.item);
    events.push(this.event('response.output_item.done', { output_index: open.index, item: open.item }));
    return events;
  }

  private begin(kind: OpenItem['kind'], item: Json, toolIndex?: number): LoggedEvent[] {
    const events = this.close();
    const index = this.output.length;
    this.open = { kind, index, item, text: '', toolIndex };
    events.push(this.event('response.output_item.added', { output_index: index, item: { ...item } }));
    return events;
  }

  private reasoningItem(): LoggedEvent[] {
    if (this.open?.kind === 'reasoning' && this.open.item.encrypted_content === undefined) return [];
    return this.begin('reasoning', { id: itemId(this.shell.id, 'rs', this.output.length + (this.open ? 1 : 0)), type: 'reasoning', summary: [] });
  }

  deltas(deltas: ChoiceDelta[]): LoggedEvent[] {
    const events: LoggedEvent[] = [];
    for (const delta of deltas) {
      if (delta.index !== 0) continue;
      if (delta.redactedReasoning !== undefined) {
        events.push(...this.begin('reasoning', { id: itemId(this.shell.id, 'rs', this.output.length + (this.open ? 1 : 0)), type: 'reasoning', summary: [], encrypted_content: delta.redactedReasoning }), ...this.close());
      }
      if (delta.reasoning !== undefined) {
        events.push(...this.reasoningItem());
        const open = this.open!;
        const base = { item_id: open.item.id, output_index: open.index, summary_index: 0 };
        if (!open.partOpen) {
          open.partOpen = true;
          events.push(this.event('response.reasoning_summary_part.added', { ...base, part: { type: 'summary_text', text: '' } }));
        }
        open.text += delta.reasoning;
        events.push(this.event('response.reasoning_summary_text.delta', { ...base, delta: delta.reasoning }));
      }
      if (delta.signature !== undefined) {
        events.push(...this.reasoningItem());
        // The signature lets the provider check the reasoning when the client sends it back.
        this.open!.item.encrypted_content = String(this.open!.item.encrypted_content ?? '') + delta.signature;
      }
      const words = delta.content ?? delta.refusal;
      if (words !== undefined) {
        if (this.open?.kind !== 'message') {
          events.push(...this.begin('message', { id: itemId(this.shell.id, 'msg', this.output.length + (this.open ? 1 : 0)), type: 'message', status: 'in_progress', role: 'assistant', content: [] }));
          const open = this.open!;
          events.push(this.event('response.content_part.added', { item_id: open.item.id, output_index: open.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }));
        }
        const open = this.open!;
        open.text += words;
        events.push(this.event('response.output_text.delta', { item_id: open.item.id, output_index: open.index, content_index: 0, delta: words, logprobs: [] }));
      }
      for (const call of delta.toolCalls ?? []) {
        if (call.id !== undefined || this.open?.kind !== 'function_call' || this.open.toolIndex !== call.index) {
          const index = this.output.length + (this.open ? 1 : 0);
          events.push(...this.begin('function_call', { id: itemId(this.shell.id, 'fc', index), type: 'function_call', status: 'in_progress', call_id: call.id ?? `call_${this.shell.id.slice(5, 21)}_${index}`, name: call.function?.name ?? '', arguments: '' }, call.index));
        }
        const fragment = call.function?.arguments;
        if (fragment) {
          const open = this.open!;
          open.text += fragment;
          events.push(this.event('response.function_call_arguments.delta', { item_id: open.item.id, output_index: open.index, delta: fragment }));
        }
      }
      if (delta.finishReason) this.finishReason = delta.finishReason;
    }
    return events;
  }

  finish(usage: Usage, completedAt: number): LoggedEvent[] {
    const events = this.close();
    const incomplete = this.finishReason === 'length' ? 'max_output_tokens' : this.finishReason === 'content_filter' ? 'content_filter' : undefined;
    this.status = incomplete ? 'incomplete' : 'completed';
    this.final = this.snapshot(this.status, {
      usage: responsesUsage(usage),
      completed_at: incomplete ? null : completedAt,
      incomplete_details: incomplete ? { reason: incomplete } : null,
    });
    events.push(this.event(incomplete ? 'response.incomplete' : 'response.completed', { response: this.final }));
    return events;
  }

  /** The error event as OpenAI sends it (openai-node raises it), then response.failed. */
  fail(description: ErrorDescription): LoggedEvent[] {
    const error = errorFromDescription(description);
    const events = this.close();
    this.status = 'failed';
    this.final = this.snapshot('failed', { error: { code: error.code, message: error.message } });
    events.push(this.event('error', { error: { type: error.type, code: error.code, message: error.message, param: error.param } }));
    events.push(this.event('response.failed', { response: this.final }));
    return events;
  }

  /** Cancelled: no more events; the object keeps what was produced. */
  cancel(): Json {
    this.close();
    this.status = 'cancelled';
    this.final = this.snapshot('cancelled');
    return this.final;
  }
}

export function sseFrames(events: LoggedEvent[]): string {
  let frames = '';
  for (const event of events) frames += `event: ${event.type}\ndata: ${event.data}\n\n`;
  return frames;
}
