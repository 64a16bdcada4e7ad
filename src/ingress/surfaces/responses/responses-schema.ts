import { z } from 'zod';
import { GatewayError } from '../../../shared/errors.js';

// POST /v1/responses, validated. Items are checked by type in responses-items.ts; unknown request
// fields pass (clients such as Codex send include, prompt_cache_key, service_tier...), and only
// what the gateway acts on is typed here.

const item = z.object({ type: z.string().optional(), role: z.string().optional() }).passthrough();
const tool = z.object({ type: z.string() }).passthrough();

const textFormat = z
  .object({
    type: z.enum(['text', 'json_object', 'json_schema']),
    name: z.string().optional(),
    schema: z.record(z.unknown()).optional(),
    strict: z.boolean().nullish(),
    description: z.string().optional(),
  })
  .passthrough();

const responsesRequestSchema = z
  .object({
    model: z.string().min(1),
    input: z.union([z.string(), z.array(item)]).optional(),
    instructions: z.string().nullish(),
    tools: z.array(tool).max(512).optional(),
    tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.object({ type: z.string(), name: z.string().optional() }).passthrough()]).optional(),
    parallel_tool_calls: z.boolean().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    max_output_tokens: z.number().int().positive().max(1_000_000).nullish(),
    text: z.object({ format: textFormat.optional(), verbosity: z.string().nullish() }).passthrough().nullish(),
    reasoning: z.object({ effort: z.string().nullish(), summary: z.string().nullish() }).passthrough().nullish(),
    metadata: z.record(z.string().max(512)).nullish(),
    store: z.boolean().nullish(),
    stream: z.boolean().nullish(),
    background: z.boolean().nullish(),
    previous_response_id: z.string().nullish(),
    user: z.string().nullish(),
    /** The gateway's own: models to try when the first fails before its first token. */
    fallbacks: z.array(z.string()).max(5).optional(),
  })
  .passthrough();

export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;
export type ResponseItem = z.infer<typeof item>;

function paramOf(path: ReadonlyArray<string | number>): string {
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('');
}

export function parseResponsesRequest(body: unknown): ResponsesRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new GatewayError('invalid_value', 'The request body must be a JSON object.');
  const parsed = responsesRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = paramOf(issue.path) || null;
    if (issue.code === 'invalid_type' && issue.received === 'undefined') throw new GatewayError('missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
    throw new GatewayError('invalid_value', `Invalid value for '${param}': ${issue.message}`, { param });
  }
  const request = parsed.data;
  if (request.metadata && Object.keys(request.metadata).length > 16) throw new GatewayError('invalid_value', 'metadata takes at most 16 pairs.', { param: 'metadata' });
  if (request.background && request.store === false) throw new GatewayError('invalid_value', 'Background responses must be stored: background requires store to be true.', { param: 'background' });
  if (request.text?.format?.type === 'json_schema' && !request.text.format.name) throw new GatewayError('missing_required_parameter', "Missing required parameter: 'text.format.name'.", { param: 'text.format.name' });
  return request;
}
