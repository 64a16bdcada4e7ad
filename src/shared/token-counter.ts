import { nonTextPartTokenBound } from './input-token-bounds.js';
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

/**
 * Byte-pair encoding runs on the event loop at about 7 MB/s: four 4 MiB prompts held every other
 * request (and /healthz) for over 2 s. So at most this many characters of one count are encoded.
 * For a reservation, text beyond it counts as its UTF-8 length in bytes, which bounds the token
 * count from above (every token of a byte-level BPE such as o200k_base covers at least one byte).
 * For an estimate of usage a provider did not report, it counts at the tokens-per-byte ratio of
 * the text that was encoded.
 */
export const exactCountLimit = 128 * 1024;

/** Reservations need an upper bound; usage estimates need the nearest count. */
export type CountPurpose = 'reservation' | 'estimate';

/** The cheap upper bound used for text that is not encoded. */
export function tokenUpperBound(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** English runs at about 4.5 bytes a token, code at 3.5, CJK at under 2: a ratio before any was measured. */
const fallbackTokensPerByte = 1 / 3;

function encodePieces(text: string): number {
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

/** Counts the texts of one request or answer, encoding at most exactCountLimit characters in all. */
class TokenTally {
  private remaining = exactCountLimit;
  private encodedTokens = 0;
  private encodedBytes = 0;

  constructor(private readonly purpose: CountPurpose) {}

  count(text: string): number {
    if (text.length === 0) return 0;
    if (!encoder) return tokenUpperBound(text);
    if (text.length <= this.remaining) return this.encode(text);
    if (this.purpose === 'reservation') return tokenUpperBound(text);
    const headLength = Math.max(0, this.remaining);
    const head = headLength > 0 ? this.encode(text.slice(0, headLength)) : 0;
    const ratio = this.encodedBytes > 0 ? this.encodedTokens / this.encodedBytes : fallbackTokensPerByte;
    return head + Math.ceil(tokenUpperBound(text.slice(headLength)) * ratio);
  }

  private encode(text: string): number {
    const tokens = encodePieces(text);
    this.remaining -= text.length;
    this.encodedTokens += tokens;
    this.encodedBytes += tokenUpperBound(text);
    return tokens;
  }
}

/** An estimate of the tokens of `text` (a completion a provider reported no usage for). */
export function countTextTokens(text: string): number {
  return new TokenTally('estimate').count(text);
}

function partContent(part: ContentPart, into: { text: string; nonTextTokens: number }): void {
  switch (part.type) {
    case 'text':
    case 'reasoning':
    case 'refusal':
      into.text += part.text;
      return;
    case 'tool_call':
      into.text += part.name + part.arguments;
      return;
    case 'tool_result':
      if (typeof part.content === 'string') into.text += part.content;
      else for (const inner of part.content) partContent(inner, into);
      return;
    case 'opaque':
      into.text += JSON.stringify(part.value);
      return;
    default:
      into.nonTextTokens += nonTextPartTokenBound(part);
  }
}

function messageContent(message: InternalMessage): { text: string; nonTextTokens: number } {
  const into = { text: message.role as string, nonTextTokens: 0 };
  for (const part of message.content) partContent(part, into);
  return into;
}

/**
 * An upper bound (exact for OpenAI models on short prompts) of the prompt tokens a request costs:
 * message text, tool definitions, tool choice and a response_format schema by the tokenizer (see
 * exactCountLimit), and images, audio and files by input-token-bounds.ts.
 */
export function countPromptTokens(request: InternalRequest, purpose: CountPurpose = 'reservation'): number {
  const tally = new TokenTally(purpose);
  let total = tokensPerReply;
  for (const message of request.messages) {
    const { text, nonTextTokens } = messageContent(message);
    // The tokenizer cannot count images, audio or files; estimates leave them out, as before.
    total += tokensPerMessage + tally.count(text) + (purpose === 'reservation' ? nonTextTokens : 0);
  }
  if (request.tools) total += tally.count(JSON.stringify(request.tools));
  if (request.toolChoice?.type === 'tool') total += tally.count(request.toolChoice.name);
  if (request.responseFormat?.type === 'json_schema') total += tally.count(JSON.stringify(request.responseFormat));
  return total;
}
