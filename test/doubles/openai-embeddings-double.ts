// The OpenAI double's embeddings endpoints (POST /v1/embeddings and Azure's deployment route):
// OpenAI's request checks and answer shape, floats or base64 (little-endian float32) as asked, and
// usage. Scripted `error` and `hang` behave as on chat; anything else answers with vectors.
import { defaultEmbeddingDimensions, fakeEmbedding, fakeInputTokens, float32Base64 } from './embedding-vectors.js';
import { sendError, sendJson, type Exchange, type ScriptedBehaviour } from './openai-provider-double.js';
import { baseHeaders, defaultError } from './openai-provider-responses.js';

export const azureDeploymentPattern = /^POST \/openai\/deployments\/([^/]+)\/embeddings$/;

const invalidField = (field: string) => `'$.${field}' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.`;

/** The inputs of a request body, or undefined when `input` is not one of OpenAI's four forms. */
function inputsOf(input: unknown): Array<string | number[]> | undefined {
  if (typeof input === 'string') return input === '' ? undefined : [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((item) => typeof item === 'number')) return [input as number[]];
  if (input.every((item) => (typeof item === 'string' && item !== '') || (Array.isArray(item) && item.length > 0 && item.every((token) => typeof token === 'number')))) return input as Array<string | number[]>;
  return undefined;
}

export async function answerEmbeddings(ex: Exchange, behaviour: ScriptedBehaviour, malformed: boolean): Promise<void> {
  const invalid = (message: string, param: string | null = null) => sendError(ex, 400, { message, type: 'invalid_request_error', param, code: null });
  if (malformed) return invalid('We could not parse the JSON body of your request.');
  if (!ex.model) return invalid('you must provide a model parameter');
  const inputs = inputsOf(ex.body.input);
  if (!inputs) return invalid(invalidField('input'));
  const format = ex.body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') return invalid(invalidField('encoding_format'));
  if (behaviour.kind === 'hang') return;
  if (behaviour.kind === 'error') {
    const d = defaultError(behaviour.status, ex.model);
    const fields = { message: behaviour.message ?? d.message, type: behaviour.type ?? d.type, param: behaviour.param !== undefined ? behaviour.param : d.param, code: behaviour.code !== undefined ? behaviour.code : d.code };
    return sendError(ex, behaviour.status, fields, behaviour.retryAfter);
  }
  const scripted = behaviour.kind === 'embedding' ? behaviour : undefined;
  const dimensions = scripted?.dimensions ?? (Number.isInteger(ex.body.dimensions) ? (ex.body.dimensions as number) : defaultEmbeddingDimensions);
  const data = inputs.slice(0, scripted?.count ?? inputs.length).map((input, index) => {
    const values = fakeEmbedding(ex.model, input, dimensions);
    return { object: 'embedding', index, embedding: format === 'base64' ? float32Base64(values) : values };
  });
  const tokens = typeof scripted?.promptTokens === 'number' ? scripted.promptTokens : fakeInputTokens(inputs);
  const body: Record<string, unknown> = { object: 'list', data, model: ex.model };
  if (scripted?.promptTokens !== 'omit') body.usage = { prompt_tokens: tokens, total_tokens: tokens };
  sendJson(ex, 200, body, baseHeaders({ tokens }));
}
