import { z } from 'zod';
import { GatewayError } from '../../../shared/errors.js';

export const limits = {
  maxFallbacks: 5,
  maxChoices: 16,
  maxStopSequences: 4,
  maxMessages: 4096,
  maxTools: 128,
  maxTokensCeiling: 1_000_000,
} as const;

const textPart = z.object({ type: z.literal('text'), text: z.string() }).passthrough();
const imagePart = z
  .object({
    type: z.literal('image_url'),
    image_url: z.object({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }).passthrough(),
  })
  .passthrough();
const otherPart = z.object({ type: z.enum(['input_audio', 'file', 'refusal']) }).passthrough();
const contentPart = z.discriminatedUnion('type', [textPart, imagePart, otherPart]);

const toolCall = z
  .object({
    id: z.string().min(1),
    type: z.literal('function'),
    function: z.object({ name: z.string().min(1), arguments: z.string() }).passthrough(),
  })
  .passthrough();

const systemMessage = z.object({
  role: z.enum(['system', 'developer']),
  content: z.union([z.string(), z.array(textPart).min(1)]),
  name: z.string().optional(),
});
const userMessage = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(contentPart).min(1)]),
  name: z.string().optional(),
});
const assistantMessage = z
  .object({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(z.union([textPart, z.object({ type: z.literal('refusal'), refusal: z.string() })])), z.null()]).optional(),
    name: z.string().optional(),
    tool_calls: z.array(toolCall).optional(),
    refusal: z.string().nullable().optional(),
  })
  .refine((message) => message.content != null || (message.tool_calls?.length ?? 0) > 0, {
    message: 'An assistant message needs content or tool_calls.',
    path: ['content'],
  });
const toolMessage = z.object({
  role: z.literal('tool'),
  content: z.union([z.string(), z.array(textPart).min(1)]),
  tool_call_id: z.string().min(1),
});

const message = z.discriminatedUnion('role', [
  systemMessage.extend({ role: z.literal('system') }),
  systemMessage.extend({ role: z.literal('developer') }),
  userMessage,
  // discriminatedUnion needs plain objects; the assistant refinement is applied below.
  z.object({ role: z.literal('assistant') }).passthrough(),
  toolMessage,
]);

const functionName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'Function names are 1 to 64 characters of a-z, A-Z, 0-9, _ and -.');
const tool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: functionName,
    description: z.string().optional(),
    parameters: z.record(z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});
const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: functionName }) }),
]);
// A catalog id (svc/<name>) or one of the catalog's aliases; which exist is the catalog's to say (404).
const modelId = z.string().min(1, 'Model IDs look like svc/<model name>.').max(256);

export const chatRequestSchema = z
  .object({
    model: modelId,
    messages: z.array(message).min(1, 'messages must hold at least one message.').max(limits.maxMessages),
    fallbacks: z.array(modelId).max(limits.maxFallbacks, `At most ${limits.maxFallbacks} fallbacks are allowed.`).optional(),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    max_tokens: z.number().int().min(1).max(limits.maxTokensCeiling).nullable().optional(),
    max_completion_tokens: z.number().int().min(1).max(limits.maxTokensCeiling).nullable().optional(),
    stop: z.union([z.string(), z.array(z.string()).max(limits.maxStopSequences, `stop takes at most ${limits.maxStopSequences} sequences.`)]).nullable().optional(),
    n: z.number().int().min(1).max(limits.maxChoices).nullable().optional(),
    presence_penalty: z.number().min(-2).max(2).nullable().optional(),
    frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
    tools: z.array(tool).max(limits.maxTools).optional(),
    tool_choice: toolChoice.optional(),
    parallel_tool_calls: z.boolean().optional(),
    user: z.string().max(256).optional(),
    response_format: z
      .union([
        z.object({ type: z.literal('text') }),
        z.object({ type: z.literal('json_object') }),
        z.object({ type: z.literal('json_schema'), json_schema: z.object({ name: z.string() }).passthrough() }),
      ])
      .optional(),
    seed: z.number().int().nullable().optional(),
    logprobs: z.boolean().nullable().optional(),
    top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
    logit_bias: z.record(z.number().min(-100).max(100)).nullable().optional(),
    service_tier: z.string().nullable().optional(),
    store: z.boolean().nullable().optional(),
    metadata: z.record(z.string()).nullable().optional(),
    reasoning_effort: z.string().nullable().optional(),
    safety_identifier: z.string().optional(),
    prompt_cache_key: z.string().optional(),
    verbosity: z.string().optional(),
    modalities: z.array(z.string()).nullable().optional(),
  })
  .strict();

export type ChatRequest = Omit<z.infer<typeof chatRequestSchema>, 'messages'> & { messages: ChatMessage[] };

export type ChatMessage =
  | { role: 'system' | 'developer'; content: string | Array<{ type: 'text'; text: string }>; name?: string }
  | { role: 'user'; content: string | Array<Record<string, unknown> & { type: string }>; name?: string }
  | { role: 'assistant'; content?: string | null | Array<Record<string, unknown>>; tool_calls?: ToolCall[]; name?: string; refusal?: string | null }
  | { role: 'tool'; content: string | Array<{ type: 'text'; text: string }>; tool_call_id: string };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

function formatPath(path: Array<string | number>): string {
  return path.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${part}` : part), '');
}

function valueAt(root: unknown, path: Array<string | number>): unknown {
  let value = root;
  for (const part of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

function issueToError(issue: z.ZodIssue, body?: unknown): GatewayError {
  const param = formatPath(issue.path) || null;
  if (body !== undefined && issue.path.length > 0 && issue.code !== 'unrecognized_keys' && valueAt(body, issue.path) === undefined) {
    return new GatewayError('missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
  }
  if (issue.code === 'unrecognized_keys') {
    return new GatewayError('unknown_parameter', `Unrecognized request argument supplied: ${issue.keys.join(', ')}`, { param: issue.keys[0] ?? null });
  }
  if (issue.code === 'invalid_type' && issue.received === 'undefined') {
    return new GatewayError('missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
  }
  if (issue.code === 'invalid_union_discriminator' && issue.path.at(-1) === 'role') {
    return new GatewayError('invalid_value', `Invalid value for '${param}': roles are system, user, assistant and tool.`, { param });
  }
  return new GatewayError('invalid_value', `Invalid value for '${param}': ${issue.message}`, { param });
}

const assistantSchema = assistantMessage;

/** Validates a parsed JSON body into a ChatRequest, or throws the first problem as a 400. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_value', 'The request body must be a JSON object.');
  }
  const parsed = chatRequestSchema.safeParse(body);
  if (!parsed.success) throw issueToError(parsed.error.issues[0]!, body);
  const request = parsed.data as unknown as ChatRequest;
  request.messages.forEach((entry, index) => {
    if (entry.role !== 'assistant') return;
    const checked = assistantSchema.safeParse(entry);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      throw issueToError({ ...issue, path: ['messages', index, ...issue.path] });
    }
    request.messages[index] = checked.data as unknown as ChatMessage;
  });
  if (request.temperature != null && request.top_p != null) {
    throw new GatewayError('invalid_value', 'Use either temperature or top_p, not both.', { param: 'top_p' });
  }
  if (request.tool_choice && typeof request.tool_choice === 'object') {
    const name = request.tool_choice.function.name;
    if (!request.tools?.some((candidate) => candidate.function.name === name)) {
      throw new GatewayError('invalid_value', `tool_choice names the function '${name}', which is not in tools.`, { param: 'tool_choice' });
    }
  }
  if (request.stream_options && !request.stream) {
    throw new GatewayError('invalid_value', 'stream_options is only allowed when stream is true.', { param: 'stream_options' });
  }
  return request;
}

export function choiceCount(request: ChatRequest): number {
  return request.n ?? 1;
}
