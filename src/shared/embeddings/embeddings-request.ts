// The request an embeddings job carries: what POST /v1/embeddings asked for, before any provider's
// format. Inputs keep their order; the answer has one vector per input at the same index.

/** Text, or text already turned into token ids (OpenAI's int[] input form). */
export type EmbeddingInput = string | number[];

export type EncodingFormat = 'float' | 'base64';

/** A vector as floats, or as base64 of its little-endian float32 bytes. */
export type Embedding = number[] | string;

export interface EmbeddingsRequest {
  /** The model as the client named it (an id or an alias). */
  model: string;
  fallbacks?: string[];
  inputs: EmbeddingInput[];
  /** Output size for models that can shorten their vectors. */
  dimensions?: number;
  /** How the client wants the vectors; the gateway converts when a provider answers otherwise. */
  encodingFormat: EncodingFormat;
  /** The end user, for the provider's abuse monitoring. */
  user?: string;
}
