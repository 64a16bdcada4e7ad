import { z } from 'zod';
import type { EmbeddingsRequest } from '../../../shared/embeddings/embeddings-request.js';
import { GatewayError } from '../../../shared/errors.js';

// POST /v1/embeddings request body, as OpenAI documents it: input is a string, an array of
// strings, an array of token ids or an array of such arrays (at most 2048 inputs), plus
// `fallbacks` as on chat. Unknown fields are refused, as OpenAI does.

export const embeddingLimits = { maxInputs: 2048, maxFallbacks: 5, maxDimensions: 65_536 } as const;

const text = z.string().min(1, 'inputs must not be empty strings.');
const tokens = z.array(z.number().int().nonnegative()).min(1, 'token arrays must not be empty.');
const modelId = z.string().min(1, 'Model IDs look like svc/<model name>.').max(256);
const many = <T extends z.ZodTypeAny>(item: T) => z.array(item).min(1, 'input must hold at least one item.').max(embeddingLimits.maxInputs, `input holds at most ${embeddingLimits.maxInputs} items.`);

const schema = z
  .object({
    model: modelId,
    input: z.union([text, many(text), tokens, many(tokens)]),
    fallbacks: z.array(modelId).max(embeddingLimits.maxFallbacks, `At most ${embeddingLimits.maxFallbacks} fallbacks are allowed.`).optional(),
    // Some clients send null for "not set".
    dimensions: z.number().int().min(1).max(embeddingLimits.maxDimensions).nullable().optional(),
    encoding_format: z.enum(['float', 'base64']).nullable().optional(),
    user: z.string().max(256).optional(),
  })
  .strict();

function issueToError(issue: z.ZodIssue, body: Record<string, unknown>): GatewayError {
  const param = issue.path.length > 0 ? issue.path.join('.') : null;
  // A top-level field that is absent (a union reports it as a failed union, not as undefined).
  const absent = issue.path.length === 1 && body[issue.path[0]!] === undefined;
  if (absent && issue.code !== 'unrecognized_keys') return new GatewayError('missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
  if (issue.code === 'unrecognized_keys') return new GatewayError('unknown_parameter', `Unrecognized request argument supplied: ${issue.keys.join(', ')}`, { param: issue.keys[0] ?? null });
  if (issue.code === 'invalid_union' && param === 'input') {
    return new GatewayError('invalid_value', "Invalid value for 'input': send a non-empty string, an array of up to 2048 non-empty strings, an array of token ids, or an array of such arrays.", { param });
  }
  return new GatewayError('invalid_value', `Invalid value for '${param}': ${issue.message}`, { param });
}

export function parseEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new GatewayError('invalid_value', 'The request body must be a JSON object.');
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw issueToError(parsed.error.issues[0]!, body as Record<string, unknown>);
  const { model, input, fallbacks, dimensions, encoding_format: encodingFormat, user } = parsed.data;
  // A lone string or token array is one input; anything else is already a list of inputs.
  const inputs = typeof input === 'string' || typeof input[0] === 'number' ? [input as string | number[]] : (input as string[] | number[][]);
  const request: EmbeddingsRequest = { model, inputs, encodingFormat: encodingFormat ?? 'float' };
  if (fallbacks !== undefined) request.fallbacks = fallbacks;
  if (dimensions != null) request.dimensions = dimensions;
  if (user !== undefined) request.user = user;
  return request;
}
