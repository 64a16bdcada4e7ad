import { GatewayError } from '../../errors.js';
import type { EmbeddingsRequest } from '../../embeddings/embeddings-request.js';
import type { EmbeddingsAdapter, EmbeddingsContext, NormalizedEmbeddings } from '../embeddings-adapter.js';
import type { ProviderHttpRequest } from '../chat-adapter.js';
import { parseGeminiError } from './gemini-errors.js';

// Gemini's models/{m}:batchEmbedContents, which takes one request per input (a single input is a
// batch of one, so one call shape serves both). `dimensions` becomes outputDimensionality. Gemini
// answers with floats and no usage: the worker encodes base64 itself and counts the input tokens.

function buildRequest(request: EmbeddingsRequest, context: EmbeddingsContext): ProviderHttpRequest {
  const model = encodeURIComponent(context.upstreamModel);
  const requests = request.inputs.map((input, index) => {
    if (typeof input !== 'string') {
      throw new GatewayError('invalid_value', `Invalid value for 'input[${index}]': Gemini embedding models take text; token arrays cannot be sent to them.`, { param: 'input' });
    }
    const entry: Record<string, unknown> = { model: `models/${context.upstreamModel}`, content: { parts: [{ text: input }] } };
    if (request.dimensions !== undefined) entry.outputDimensionality = request.dimensions;
    return entry;
  });
  const headers: Record<string, string> = { 'content-type': 'application/json', ...context.provider.headers };
  if (context.provider.apiKey) headers['x-goog-api-key'] = context.provider.apiKey;
  return { url: `${context.provider.baseUrl}/models/${model}:batchEmbedContents`, method: 'POST', headers, body: JSON.stringify({ requests }) };
}

function parseResponse(text: string, inputCount: number): NormalizedEmbeddings {
  const parsed = JSON.parse(text) as { embeddings?: Array<{ values?: unknown }> };
  const list = parsed.embeddings;
  if (!Array.isArray(list) || list.length !== inputCount) throw new Error(`The provider answered with ${Array.isArray(list) ? list.length : 'no'} embeddings for ${inputCount} inputs.`);
  const embeddings = list.map((entry) => {
    const values = entry?.values;
    if (!Array.isArray(values) || !values.every((value) => typeof value === 'number')) throw new Error('The provider answered with a malformed embedding.');
    return values as number[];
  });
  return { embeddings };
}

export const geminiEmbeddingsAdapter: EmbeddingsAdapter = { buildRequest, parseResponse, parseError: parseGeminiError };
