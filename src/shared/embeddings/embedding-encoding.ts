import type { Embedding, EncodingFormat } from './embeddings-request.js';

// OpenAI's base64 form of a vector is its float32 values, little-endian, base64-encoded (what the
// official clients decode with a Float32Array). Vectors cross the transport in that form whatever
// the provider sent: a quarter of the size of JSON floats, which keeps large batches well inside
// Redis pub/sub's output buffer limits when scaled out. The ingress turns them into floats for a
// client that asked for floats. Embedding models compute in float32, so nothing is lost.

export function floatsToBase64(values: number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  for (let index = 0; index < values.length; index++) bytes.writeFloatLE(values[index]!, index * 4);
  return bytes.toString('base64');
}

/** Nine significant digits identify a float32 exactly, and print in about half the characters of its double form. */
export function base64ToFloats(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  const values = new Array<number>(Math.floor(bytes.length / 4));
  for (let index = 0; index < values.length; index++) values[index] = Number(bytes.readFloatLE(index * 4).toPrecision(9));
  return values;
}

/** A provider's vector in the transport's form (base64). */
export function toTransportForm(embedding: Embedding): string {
  return typeof embedding === 'string' ? embedding : floatsToBase64(embedding);
}

/** A vector from the transport in the encoding the client asked for. */
export function inClientEncoding(base64: string, format: EncodingFormat): Embedding {
  return format === 'base64' ? base64 : base64ToFloats(base64);
}
