import type { ContentPart, InternalMessage } from './internal/parts.js';
import type { InternalRequest } from './internal/request.js';

// Counts tokens when a provider reports none (and to size budget reservations). o200k_base is
// OpenAI's current encoding; for other vendors' models it is an estimate, which is why records
// counted this way are marked estimated. The rank table is large, so it loads on first use.

type Encode = (text: string) => number[];
let encoder: Encode | undefined;
let loading: Promise<Encode> | undefined;

async function loadEncoder(): Promise<Encode> {
  const module = await import('gpt-tokenizer/encoding/o200k_base');
  encoder = module.encode;
  return encoder;
}

export function prepareTokenCounter(): Promise<Encode> {
  loading ??= loadEncoder();
  return loading;
}

/** Every message costs a few framing tokens on top of its text (OpenAI's published rule of thumb). */
const tokensPerMessage = 4;
const tokensPerReply = 3;

/**
 * Byte-pair merging is quadratic in the length of one pre-token, and a run such as a megabyte of
 * 'x' is a single pre-token. So text is encoded in bounded pieces: words are gathered into pieces
 * of up to 256 characters, and a word longer than 32 characters is encoded 32 at a time. No input
 * can then stall the process; the count may differ from the exact one by a token per cut.
 */
const pieceLength = 256;
const longWord = 32;
const wordPattern = /\s+|\S+/g;

function encodedLength(text: string): number {
  return encoder!(text).length;
}

/** Rough count (a character is never more than one token) until the encoder has loaded. */
export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  if (!encoder) return Math.ceil(text.length / 2);
  if (text.length <= longWord) return encodedLength(text);
  let total = 0;
  let piece = '';
  for (const match of text.matchAll(wordPattern)) {
    const word = match[0];
    if (word.length > longWord) {
      if (piece) total += encodedLength(piece);
      piece = '';
      for (let start = 0; start < word.length; start += longWord) total += encodedLength(word.slice(start, start + longWord));
      continue;
    }
    if (piece.length + word.length > pieceLength) {
      total += encodedLength(piece);
      piece = '';
    }
    piece += word;
  }
  if (piece) total += encodedLength(piece);
  return total;
}

function partText(part: ContentPart): string {
  switch (part.type) {
    case 'text':
    case 'reasoning':
    case 'refusal':
      return part.text;
    case 'tool_call':
      return part.name + part.arguments;
    case 'tool_result':
      return typeof part.content === 'string' ? part.content : part.content.map(partText).join('');
    case 'opaque':
      return JSON.stringify(part.value);
    default:
      return '';
  }
}

function messageText(message: InternalMessage): string {
  let text: string = message.role;
  for (const part of message.content) text += partText(part);
  return text;
}

export function countPromptTokens(request: InternalRequest): number {
  let total = tokensPerReply;
  for (const message of request.messages) total += tokensPerMessage + countTextTokens(messageText(message));
  if (request.tools) total += countTextTokens(JSON.stringify(request.tools));
  return total;
}
