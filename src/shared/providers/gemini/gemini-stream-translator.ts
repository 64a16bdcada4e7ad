import type { Usage } from '../../usage.js';
import type { SseEvent, StreamPart, StreamTranslator, UpstreamFailure } from '../chat-adapter.js';
import { geminiFailure, readGeminiError } from './gemini-errors.js';
import { functionArguments, geminiFinishReason, geminiToolCallId, geminiUsage, type GeminiResponse } from './gemini-response.js';

interface CandidateState {
  /** Parts seen so far, so a call's position matches its place in the unstreamed response. */
  partCount: number;
  toolCallCount: number;
  finished: boolean;
}

/**
 * Turns Gemini streamGenerateContent (alt=sse) events into stream parts. Every event is a whole
 * GenerateContentResponse holding only the new parts; function calls arrive complete, never in
 * fragments. Each event repeats usageMetadata, and only the last is final. Gemini sends no [DONE],
 * so the end part comes from finish(), when the worker has seen the body end.
 */
export class GeminiStreamTranslator implements StreamTranslator {
  private readonly candidates = new Map<number, CandidateState>();
  private usage: Usage | undefined;
  private reportedUsage: string | undefined;
  private sawFinish = false;
  private closed = false;

  push(event: SseEvent): StreamPart[] {
    if (this.closed) return [];
    let data: GeminiResponse;
    try {
      data = JSON.parse(event.data);
    } catch {
      return this.fail({ kind: 'server_error', message: 'Gemini sent a stream event that is not JSON.' });
    }
    const error = readGeminiError(data);
    if (error) return this.fail(geminiFailure(error, { kind: 'server_error', message: 'Gemini reported an error mid-stream.' }));

    const parts: StreamPart[] = [];
    (data.candidates ?? []).forEach((candidate, position) => {
      const index = candidate.index ?? position;
      const state = this.stateFor(index);
      (candidate.content?.parts ?? []).forEach((part) => {
        const partPosition = state.partCount++;
        if (typeof part.text === 'string' && part.text !== '') parts.push(part.thought ? { type: 'delta', index, reasoning: part.text } : { type: 'delta', index, content: part.text });
        const call = part.functionCall;
        if (call && typeof call.name === 'string') {
          const id = call.id || geminiToolCallId(data.responseId, index, partPosition, call.name);
          const toolCalls = [{ index: state.toolCallCount++, id, type: 'function' as const, function: { name: call.name, arguments: functionArguments(call.args) } }];
          parts.push({ type: 'delta', index, toolCalls });
        }
      });
      if (candidate.finishReason) {
        parts.push({ type: 'finish', index, finishReason: geminiFinishReason(candidate.finishReason, state.toolCallCount > 0) });
        state.finished = true;
        this.sawFinish = true;
      }
    });
    if (!data.candidates?.length && data.promptFeedback?.blockReason) {
      parts.push({ type: 'finish', index: 0, finishReason: 'content_filter' });
      this.sawFinish = true;
    }
    const usage = geminiUsage(data.usageMetadata);
    if (usage) this.usage = usage;
    // Before the finish the counts are still growing; reporting them would only be noise.
    if (this.sawFinish) parts.push(...this.usagePart());
    return parts;
  }

  finish(): StreamPart[] {
    if (this.closed) return [];
    this.closed = true;
    // Before any finishReason the counts lack the output side, and the worker's estimate is better.
    if (!this.sawFinish) return [];
    const parts = this.usagePart();
    // A body that ends before every candidate has its finishReason was cut off. Withholding the end
    // part lets the worker report that instead of passing a truncated answer off as complete.
    if ([...this.candidates.values()].every((state) => state.finished)) parts.push({ type: 'end' });
    return parts;
  }

  private stateFor(index: number): CandidateState {
    let state = this.candidates.get(index);
    if (!state) {
      state = { partCount: 0, toolCallCount: 0, finished: false };
      this.candidates.set(index, state);
    }
    return state;
  }

  /** A usage part only when the counts differ from the last one reported. */
  private usagePart(): StreamPart[] {
    if (!this.usage) return [];
    const key = JSON.stringify(this.usage);
    if (key === this.reportedUsage) return [];
    this.reportedUsage = key;
    return [{ type: 'usage', usage: this.usage }];
  }

  private fail(failure: UpstreamFailure): StreamPart[] {
    // After an error the stream is over; finish() must not dress it up as a normal end.
    this.closed = true;
    return [{ type: 'error', failure }];
  }
}
