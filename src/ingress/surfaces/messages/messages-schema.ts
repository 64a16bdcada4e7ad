import { z } from 'zod';
import { GatewayError } from '../../../shared/errors.js';

// Anthropic's Messages request, checked for what the gateway relies on. Fields it does not model
// are accepted as they are (passthrough): they reach Anthropic targets unchanged and are dropped
// for others, never refused.

const block = z.object({ type: z.string().min(1) }).passthrough();
const content = z.union([z.string(), z.array(block)]);

const message = z
  .object({
    role: z.enum(['user', 'assistant', 'system']),
    content,
  })
  .passthrough();

const tool = z
  .object({
    type: z.string().optional(),
    name: z.string().min(1).max(128),
    input_schema: z.record(z.unknown()).optional(),
  })
  .passthrough()
  .refine((entry) => (entry.type !== undefined && entry.type !== 'custom') || entry.input_schema !== undefined, {
    message: 'custom tools need an input_schema',
    path: ['input_schema'],
  });

export const messagesRequestSchema = z
  .object({
    model: z.string().min(1).max(256),
    max_tokens: z.number().int().min(1).max(1_000_000),
    messages: z.array(message).min(1).max(100_000),
    system: z.union([z.string(), z.array(block)]).optional(),
    stream: z.boolean().optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    stop_sequences: z.array(z.string()).max(1000).optional(),
    tools: z.array(tool).max(1000).optional(),
    tool_choice: z.object({ type: z.enum(['auto', 'any', 'tool', 'none']), name: z.string().optional(), disable_parallel_tool_use: z.boolean().optional() }).passthrough().optional(),
    metadata: z.object({ user_id: z.string().max(512).nullable().optional() }).passthrough().optional(),
    thinking: z.object({ type: z.enum(['enabled', 'disabled', 'adaptive']), budget_tokens: z.number().int().min(0).optional() }).passthrough().optional(),
    /** The gateway's own field: backup models, as on Chat Completions. */
    fallbacks: z.array(z.string().min(1).max(256)).max(5, 'At most 5 fallbacks are allowed.').optional(),
  })
  .passthrough();

/** count_tokens takes the same body without max_tokens. */
const countTokensSchema = messagesRequestSchema.extend({ max_tokens: z.number().int().min(1).max(1_000_000).optional() });

export type MessagesRequest = z.infer<typeof messagesRequestSchema>;
export type MessagesBlock = z.infer<typeof block>;

function pathText(path: Array<string | number>): string {
  return path.reduce<string>((text, part) => (typeof part === 'number' ? `${text}.${part}` : text ? `${text}.${part}` : part), '');
}

/** Validates a parsed body, or throws the first problem as Anthropic words it (`messages: Field required`). */
export function parseMessagesRequest(body: unknown, forCounting = false): MessagesRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new GatewayError('invalid_value', 'The request body must be a JSON object.');
  const parsed = (forCounting ? countTokensSchema : messagesRequestSchema).safeParse(body);
  if (parsed.success) return parsed.data as MessagesRequest;
  const issue = parsed.error.issues[0]!;
  const param = pathText(issue.path);
  const missing = issue.code === 'invalid_type' && issue.received === 'undefined';
  throw new GatewayError(missing ? 'missing_required_parameter' : 'invalid_value', `${param || 'body'}: ${missing ? 'Field required' : issue.message}`, { param: param || null });
}
