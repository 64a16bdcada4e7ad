import { Tiktoken } from 'js-tiktoken/lite';
import type { ChatMessage, ChatRequest } from './chat-request-schema.js';

// Counts tokens when a provider reports none (and to size budget reservations). o200k_base is
// OpenAI's current encoding; for other vendors' models it is an estimate, which is why records
// counted this way are marked estimated. The rank table is large, so it loads on first use.

let encoder: Tiktoken | undefined;
let loading: Promise<Tiktoken> | undefined;

async function loadEncoder(): Promise<Tiktoken> {
  const ranks = (await import('js-tiktoken/ranks/o200k_base')).default;
  encoder = new Tiktoken(ranks);
  return encoder;
}

export function prepareTokenCounter(): Promise<Tiktoken> {
  loading ??= loadEncoder();
  return loading;
}

/** Every message costs a few framing tokens on top of its text (OpenAI's published rule of thumb). */
const tokensPerMessage = 4;
const tokensPerReply = 3;

/** Rough count (a character is never more than one token) until the encoder has loaded. */
export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  return encoder ? encoder.encode(text).length : Math.ceil(text.length / 2);
}

function messageText(message: ChatMessage): string {
  let text = message.role;
  const content = message.content;
  if (typeof content === 'string') text += content;
  else if (Array.isArray(content)) {
    for (const part of content) if (typeof (part as { text?: unknown }).text === 'string') text += (part as { text: string }).text;
  }
  if (message.role === 'assistant' && message.tool_calls) {
    for (const call of message.tool_calls) text += call.function.name + call.function.arguments;
  }
  return text;
}

export function countPromptTokens(request: ChatRequest): number {
  let total = tokensPerReply;
  for (const message of request.messages) total += tokensPerMessage + countTextTokens(messageText(message));
  if (request.tools) total += countTextTokens(JSON.stringify(request.tools));
  return total;
}
