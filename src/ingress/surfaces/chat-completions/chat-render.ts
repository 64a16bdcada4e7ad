import type { ErrorDescription } from '../../../shared/errors.js';
import { errorFromDescription } from '../../../shared/errors.js';
import type { ChoiceDelta } from '../../../shared/job.js';
import type { CompletionChoice } from '../../../shared/providers/chat-adapter.js';
import type { Usage } from '../../../shared/usage.js';

// The bytes clients see. Chunk framing is built from a prefix serialised once per stream, so a
// delta costs one small JSON.stringify of its own fields.

export function publicUsage(usage: Usage): Usage {
  const { estimated, ...rest } = usage;
  return estimated ? { ...rest, estimated: true } : rest;
}

/** A choice's parts as a Chat Completions message; reasoning and other formats' blocks have no place in it. */
function chatMessage(choice: CompletionChoice): Record<string, unknown> {
  let content: string | null = null;
  const toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
  let refusal: string | undefined;
  for (const part of choice.parts) {
    if (part.type === 'text') content = (content ?? '') + part.text;
    else if (part.type === 'tool_call') toolCalls.push({ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } });
    else if (part.type === 'refusal') refusal = (refusal ?? '') + part.text;
  }
  const message: Record<string, unknown> = { role: 'assistant', content };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (refusal !== undefined) message.refusal = refusal;
  return message;
}

export function completionBody(id: string, created: number, model: string, choices: CompletionChoice[], usage: Usage, systemFingerprint?: string): string {
  return JSON.stringify({
    id,
    object: 'chat.completion',
    created,
    model,
    choices: choices.map((choice) => ({ index: choice.index, message: chatMessage(choice), logprobs: choice.logprobs ?? null, finish_reason: choice.finishReason })),
    usage: publicUsage(usage),
    ...(systemFingerprint ? { system_fingerprint: systemFingerprint } : {}),
  });
}

export class ChunkFormatter {
  private readonly prefix: string;
  private readonly suffix: string;

  constructor(private readonly id: string, private readonly created: number, model: string, private readonly includeUsage: boolean) {
    this.prefix = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":[`;
    this.suffix = includeUsage ? '],"usage":null}\n\n' : ']}\n\n';
  }

  roleChunks(choiceCount: number): string {
    let frames = '';
    for (let index = 0; index < choiceCount; index += 1) {
      frames += `${this.prefix}{"index":${index},"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}${this.suffix}`;
    }
    return frames;
  }

  deltas(deltas: ChoiceDelta[]): string {
    let frames = '';
    for (const delta of deltas) {
      if (delta.finishReason) {
        frames += `${this.prefix}{"index":${delta.index},"delta":{},"logprobs":null,"finish_reason":${JSON.stringify(delta.finishReason)}}${this.suffix}`;
        continue;
      }
      // Reasoning has no Chat Completions field; a delta of nothing else is not sent.
      if (delta.content === undefined && !delta.toolCalls && delta.refusal === undefined) continue;
      const body: Record<string, unknown> = {};
      if (delta.content !== undefined) body.content = delta.content;
      if (delta.toolCalls) body.tool_calls = delta.toolCalls;
      if (delta.refusal !== undefined) body.refusal = delta.refusal;
      frames += `${this.prefix}{"index":${delta.index},"delta":${JSON.stringify(body)},"logprobs":${delta.logprobs === undefined ? 'null' : JSON.stringify(delta.logprobs)},"finish_reason":null}${this.suffix}`;
    }
    return frames;
  }

  usageChunk(model: string, usage: Usage): string {
    if (!this.includeUsage) return '';
    return `data: ${JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.created, model, choices: [], usage: publicUsage(usage) })}\n\n`;
  }

  /** The OpenRouter-style error chunk: openai-node and the Vercel AI SDK both raise it as an error. */
  errorChunk(model: string, error: ErrorDescription): string {
    const described = errorFromDescription(error);
    return `data: ${JSON.stringify({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model,
      error: { message: described.message, type: described.type, code: described.code },
      choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
    })}\n\n`;
  }
}

export const doneFrame = 'data: [DONE]\n\n';
