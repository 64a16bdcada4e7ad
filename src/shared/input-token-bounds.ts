import type { AudioPart, FilePart, ImagePart, MediaSource, RedactedReasoningPart } from './internal/parts.js';

// Upper bounds on the prompt tokens of content that is not text, for budget reservations. A
// reservation must never be smaller than what the provider will bill, so each bound is the largest
// any supported provider's published rule gives, or a bound by size where no rule caps it.

/**
 * Per image. The providers' published rules: OpenAI tiles (at most 8 of 512 px after scaling:
 * 85 + 170 per tile = 1,445 on gpt-4o, but 2,833 + 5,667 per tile = 48,169 on gpt-4o-mini, which
 * bills images in more, cheaper tokens), OpenAI patches (at most 1,536 x 2.46 = 3,779), Anthropic
 * (width x height / 750, about 1,600 at most) and Gemini (258 per 768 px tile; 1,120 at high
 * resolution). `detail: low` is one tile's base on OpenAI and ignored by the others.
 */
export const imageTokenBound = 48_169;
export const lowDetailImageTokenBound = 2_833;
/** Audio: at most 32 tokens a second (Gemini's rule, the highest) at 4 kbit/s or more: 1 token per 15 bytes. */
export const audioBytesPerToken = 15;
/** A file's text cannot outgrow 4 characters per byte of the (compressed) file, plus page images. */
export const fileTokensPerByte = 4;
/** A file referred to by id has a size we cannot see; its bound is a large context's worth. */
export const fileReferenceTokenBound = 200_000;

/** Bytes a base64 payload (bare or in a data: URL) decodes to; 0 when there is none. */
export function base64Bytes(value: unknown): number {
  if (typeof value !== 'string') return 0;
  const comma = value.startsWith('data:') ? value.indexOf(',') : -1;
  const payload = value.length - (comma + 1);
  return Math.floor((payload * 3) / 4);
}

function sourceBytes(source: MediaSource): number {
  if (source.kind === 'base64') return base64Bytes(source.data);
  if (source.kind === 'text') return Buffer.byteLength(source.data, 'utf8');
  if (source.kind === 'url' && source.url.startsWith('data:')) return base64Bytes(source.url);
  return 0;
}

function fileBound(part: FilePart): number {
  const bytes = sourceBytes(part.source);
  if (bytes === 0) return fileReferenceTokenBound;
  return bytes * fileTokensPerByte + imageTokenBound;
}

/** The most prompt tokens one content part that is not text (image, audio, file) can cost. */
export function nonTextPartTokenBound(part: ImagePart | AudioPart | FilePart | RedactedReasoningPart): number {
  switch (part.type) {
    case 'image':
      return part.detail === 'low' ? lowDetailImageTokenBound : imageTokenBound;
    case 'audio':
      return Math.max(1, Math.ceil(base64Bytes(part.data) / audioBytesPerToken));
    case 'file':
      return fileBound(part);
    case 'redacted_reasoning':
      // Encrypted reasoning goes back to its provider as input; its size bounds what it decrypts to.
      return Math.ceil(part.data.length / 2);
  }
}
