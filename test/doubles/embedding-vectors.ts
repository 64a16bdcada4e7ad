// Deterministic vectors for the provider doubles' embeddings endpoints: the same model and input
// always give the same values, different inputs different ones, and every value is a float32 (so
// base64 round trips are exact). Tests compute the vectors they expect with the same function.

function hash(text: string): number {
  let value = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index);
    value = Math.imul(value, 0x01000193) >>> 0;
  }
  return value;
}

export function fakeEmbedding(model: string, input: string | number[], dimensions: number): number[] {
  let state = hash(`${model}\u0000${JSON.stringify(input)}`);
  return Array.from({ length: dimensions }, () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.fround((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1);
  });
}

export function float32Base64(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString('base64');
}

/** The double's usage: a token per 4 characters of text, or the length of a token array. */
export function fakeInputTokens(inputs: Array<string | number[]>): number {
  return inputs.reduce((total, input) => total + (typeof input === 'string' ? Math.max(1, Math.ceil(input.length / 4)) : input.length), 0);
}

export const defaultEmbeddingDimensions = 8;
