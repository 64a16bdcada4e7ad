// The gateway's own message format: the widest of the client and provider formats it speaks, so
// that a request can cross from any client API to any provider and back without losing what both
// sides understand. What only one wire format knows travels in `extras` under that format's name
// (the role of providerOptions / providerMetadata in the Vercel AI SDK's provider interface) and
// reaches only targets of that format.

/** Wire formats whose own fields may ride along in `extras`. */
export type WireFormat = 'openai' | 'openai-responses' | 'anthropic' | 'gemini';

/** Fields of one wire format that the internal format does not model, per format. */
export type WireExtras = Partial<Record<WireFormat, Record<string, unknown>>>;

/** A prompt-caching breakpoint as the client wrote it (Anthropic's `cache_control`). */
export type CacheHint = Record<string, unknown>;

export type MediaSource =
  | { kind: 'url'; url: string }
  | { kind: 'base64'; mediaType: string; data: string }
  | { kind: 'text'; mediaType: string; data: string }
  | { kind: 'file_id'; id: string };

interface PartCommon {
  cache?: CacheHint;
  extras?: WireExtras;
}

export interface TextPart extends PartCommon {
  type: 'text';
  text: string;
}

export interface ImagePart extends PartCommon {
  type: 'image';
  source: MediaSource;
  detail?: string;
}

/** A document (PDF, plain text) or another file. */
export interface FilePart extends PartCommon {
  type: 'file';
  source: MediaSource;
  filename?: string;
}

export interface AudioPart extends PartCommon {
  type: 'audio';
  data: string;
  format: string;
}

/** A call the model made; `arguments` is JSON text, as it streams. */
export interface ToolCallPart extends PartCommon {
  type: 'tool_call';
  id: string;
  name: string;
  arguments: string;
}

export type ToolResultContent = Array<TextPart | ImagePart | FilePart | OpaquePart>;

export interface ToolResultPart extends PartCommon {
  type: 'tool_result';
  toolCallId: string;
  /** A string when the client sent one, else parts. */
  content: string | ToolResultContent;
  isError?: boolean;
}

/** The model's reasoning; the signature lets the provider verify it when it is sent back. */
export interface ReasoningPart extends PartCommon {
  type: 'reasoning';
  text: string;
  signature?: string;
}

/** Reasoning the provider encrypted; only that provider can read it back. */
export interface RedactedReasoningPart extends PartCommon {
  type: 'redacted_reasoning';
  data: string;
}

export interface RefusalPart extends PartCommon {
  type: 'refusal';
  text: string;
}

/** A block of one wire format with no internal counterpart (server tool use, search results): only that format gets it. */
export interface OpaquePart {
  type: 'opaque';
  wire: WireFormat;
  value: Record<string, unknown>;
}

export type ContentPart =
  | TextPart
  | ImagePart
  | FilePart
  | AudioPart
  | ToolCallPart
  | ToolResultPart
  | ReasoningPart
  | RedactedReasoningPart
  | RefusalPart
  | OpaquePart;

/** What a model can produce. */
export type OutputPart = TextPart | ToolCallPart | ReasoningPart | RedactedReasoningPart | RefusalPart | OpaquePart;

/**
 * One turn. Tool results sit in `tool` messages (OpenAI's shape) or among a user message's parts
 * (Anthropic's); every adapter accepts both.
 */
export interface InternalMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: ContentPart[];
  /** The client sent the content as a plain string; formats that have that form send it back so. */
  plainText?: boolean;
  extras?: WireExtras;
}

export function textOfParts(parts: readonly ContentPart[]): string {
  let text = '';
  for (const part of parts) if (part.type === 'text') text += part.text;
  return text;
}
