import type { Embedding, EncodingFormat } from './embeddings-request.js';

// OpenAI's base64 form of a vector is its float32 values, little-endian, base64-encoded (what the
// official clients decode with a Float32Array). Providers that only return floats (Gemini) are
// encoded here, and a base64 answer is decoded for a client that asked for floats.

export function floatsToBase64(values: number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  for (let index = 0; index < values.length; index++) bytes.writeFloatLE(values[index]!, index * 4);
  return bytes.toString('base64');
}

export function base64ToFloats(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  const values = new Array<number>(Math.floor(bytes.length / 4));
  for (let index = 0; index < values.length; index++) values[index] = bytes.readFloatLE(index * 4);
  return values;
}

/** The vector in the encoding the client asked for. */
export function inEncoding(embedding: Embedding, format: EncodingFormat): Embedding {
  if (format === 'base64') return typeof embedding === 'string' ? embedding : floatsToBase64(embedding);
  return typeof embedding === 'string' ? base64ToFloats(embedding) : embedding;
}
