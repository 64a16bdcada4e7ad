// Wire shapes of the OpenAI Chat Completions API, as seen in /work/shared/fixtures/openai
// (see FORMATS.md and SOURCES.md there). Pure builders: no I/O, used by openai-provider-double.ts.
import { randomBytes, randomInt } from 'node:crypto';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomAlnum(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALNUM[bytes[i] % ALNUM.length];
  return out;
}

/** `chatcmpl-` + 29 characters, like `chatcmpl-D8Z5oo6uDh67AD85p73ksdT1KxhE0`. */
export const completionId = (): string => `chatcmpl-${randomAlnum(29)}`;
/** `call_` + 24 characters, like `call_abc123...`. */
export const toolCallId = (): string => `call_${randomAlnum(24)}`;
export const requestId = (): string => `req_${randomBytes(16).toString('hex')}`;
export const unixSeconds = (): number => Math.floor(Date.now() / 1000);

export const SYSTEM_FINGERPRINT = 'fp_0d0b1e5a7c';

export interface TokenCounts {
  prompt_tokens: number;
  completion_tokens: number;
  /** prompt_tokens_details.cached_tokens (a subset of prompt_tokens); 0 when absent. */
  cached_tokens?: number;
  /** completion_tokens_details.reasoning_tokens (a subset of completion_tokens); 0 when absent. */
  reasoning_tokens?: number;
}

/** Full usage object as OpenAI sends it (openai-text.response.json). */
export function usageObject(counts: TokenCounts) {
  return {
    prompt_tokens: counts.prompt_tokens,
    completion_tokens: counts.completion_tokens,
    total_tokens: counts.prompt_tokens + counts.completion_tokens,
    prompt_tokens_details: { cached_tokens: counts.cached_tokens ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: counts.reasoning_tokens ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** Rough token count: ~4 characters per token, at least 1 for non-empty text. */
export const roughTokens = (text: string): number => Math.ceil(text.length / 4);

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .join('');
  }
  return '';
}

/** Rough prompt token estimate from the request body (message texts, tool calls, tool definitions). */
export function estimatePromptTokens(body: any): number {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  let chars = 0;
  for (const m of messages) {
    chars += contentText(m?.content).length;
    if (Array.isArray(m?.tool_calls)) chars += JSON.stringify(m.tool_calls).length;
  }
  if (Array.isArray(body?.tools)) chars += JSON.stringify(body.tools).length;
  return Math.max(1, Math.ceil(chars / 4) + 3 * messages.length);
}

export interface ToolCallSpec {
  id: string;
  name: string;
  arguments: string;
}

/** Non-streaming `chat.completion` body with `n` identical choices. */
export function completionBody(args: {
  id: string;
  created: number;
  model: string;
  n: number;
  text?: string;
  toolCall?: ToolCallSpec;
  finishReason: string;
  usage?: TokenCounts;
}) {
  const choices = [];
  for (let index = 0; index < args.n; index++) {
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: args.toolCall ? null : (args.text ?? ''),
    };
    if (args.toolCall) {
      message.tool_calls = [
        { id: args.toolCall.id, type: 'function', function: { name: args.toolCall.name, arguments: args.toolCall.arguments } },
      ];
    }
    message.refusal = null;
    message.annotations = [];
    choices.push({ index, message, logprobs: null, finish_reason: args.finishReason });
  }
  const body: Record<string, unknown> = {
    id: args.id,
    object: 'chat.completion',
    created: args.created,
    model: args.model,
    choices,
  };
  if (args.usage) body.usage = usageObject(args.usage);
  body.service_tier = 'default';
  body.system_fingerprint = SYSTEM_FINGERPRINT;
  return body;
}

export interface StreamContext {
  id: string;
  created: number;
  model: string;
  /** `stream_options.include_usage`: every chunk carries `usage: null`, plus a final usage-only chunk. */
  includeUsage: boolean;
  /** `stream_options.include_obfuscation` (default true on the real API): random `obfuscation` padding field. */
  obfuscation: boolean;
}

export function streamContext(model: string, body: any): StreamContext {
  const opts = body?.stream_options;
  return {
    id: completionId(),
    created: unixSeconds(),
    model,
    includeUsage: opts?.include_usage === true,
    obfuscation: opts?.include_obfuscation !== false,
  };
}

type Delta = Record<string, unknown>;

/** One `chat.completion.chunk` with a single choice (real OpenAI sends one choice per chunk, also for n > 1). */
export function chunk(ctx: StreamContext, index: number, delta: Delta, finishReason: string | null = null) {
  return chunkEnvelope(ctx, [{ index, delta, logprobs: null, finish_reason: finishReason }], null);
}

/** The usage-only chunk sent last (before [DONE]) when include_usage is true. */
export function usageChunk(ctx: StreamContext, counts: TokenCounts) {
  return chunkEnvelope(ctx, [], usageObject(counts));
}

function chunkEnvelope(ctx: StreamContext, choices: unknown[], usage: unknown) {
  const c: Record<string, unknown> = {
    id: ctx.id,
    object: 'chat.completion.chunk',
    created: ctx.created,
    model: ctx.model,
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices,
  };
  if (ctx.includeUsage) c.usage = usage;
  if (ctx.obfuscation) c.obfuscation = randomAlnum(randomInt(0, 16));
  return c;
}

/** First delta of a text choice (openai-text.include_usage.chunks.jsonl line 1). */
export const roleDelta = (): Delta => ({ role: 'assistant', content: '', refusal: null });
export const contentDelta = (content: string): Delta => ({ content });

/** First delta of a tool call: index, id, type, name and `arguments: ""`. */
export function toolCallStartDelta(index: number, call: ToolCallSpec): Delta {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
    refusal: null,
  };
}

/** Later tool-call deltas: index plus an arguments fragment. */
export const toolCallArgsDelta = (index: number, fragment: string): Delta => ({
  tool_calls: [{ index, function: { arguments: fragment } }],
});

export const sseData = (payload: unknown): string =>
  `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;
export const SSE_DONE = 'data: [DONE]\n\n';

/** Splits text into stream pieces the way tokens arrive: leading whitespace kept with each word. */
export function splitText(text: string): string[] {
  if (text === '') return [];
  return text.match(/\s*\S+|\s+$/g) ?? [text];
}

/** Splits `text` into `count` contiguous, non-empty fragments (fewer if text is shorter). */
export function splitEvenly(text: string, count: number): string[] {
  if (text === '') return [''];
  const parts = Math.max(1, Math.min(Math.floor(count), text.length));
  const size = Math.ceil(text.length / parts);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export interface OpenAiErrorFields {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

export const errorBody = (e: OpenAiErrorFields) => ({
  error: { message: e.message, type: e.type, param: e.param, code: e.code },
});

/** Default error fields per status, from error-bodies.observed.json and FORMATS.md. */
export function defaultError(status: number, model: string): OpenAiErrorFields {
  switch (status) {
    case 400:
      return { message: 'Invalid request.', type: 'invalid_request_error', param: null, code: null };
    case 401:
      return {
        message: 'Incorrect API key provided: sk-****. You can find your API key at https://platform.openai.com/account/api-keys.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      };
    case 403:
      return { message: 'Country, region, or territory not supported', type: 'request_forbidden', param: null, code: 'unsupported_country_region_territory' };
    case 404:
      return {
        message: `The model \`${model}\` does not exist or you do not have access to it.`,
        type: 'invalid_request_error',
        param: null,
        code: 'model_not_found',
      };
    case 429:
      return {
        message: `Rate limit reached for ${model} in organization org-switchboard-double on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      };
    case 503:
      return { message: 'The engine is currently overloaded, please try again later', type: 'server_error', param: null, code: null };
    default:
      if (status >= 500) {
        return {
          message: 'The server had an error while processing your request. Sorry about that!',
          type: 'server_error',
          param: null,
          code: null,
        };
      }
      return { message: `Request failed with status ${status}.`, type: 'invalid_request_error', param: null, code: null };
  }
}

/** Masks a key the way OpenAI echoes it: `sk-VKMIs****...wjh3`. */
export function maskKey(key: string): string {
  if (key.length <= 12) return `${key.slice(0, 3)}****`;
  return `${key.slice(0, 8)}${'*'.repeat(key.length - 12)}${key.slice(-4)}`;
}

export const RATE_LIMIT_REQUESTS = 10000;
export const RATE_LIMIT_TOKENS = 30000000;

/** Headers OpenAI sends on chat completion responses (x-request-id, openai-*, x-ratelimit-*). */
export function baseHeaders(opts: { tokens?: number; exhausted?: 'requests' | 'tokens'; reset?: string } = {}): Record<string, string> {
  const reset = opts.reset ?? '1s';
  return {
    'x-request-id': requestId(),
    'openai-version': '2020-10-01',
    'openai-organization': 'switchboard-double',
    'openai-processing-ms': String(randomInt(5, 60)),
    'x-ratelimit-limit-requests': String(RATE_LIMIT_REQUESTS),
    'x-ratelimit-limit-tokens': String(RATE_LIMIT_TOKENS),
    'x-ratelimit-remaining-requests': opts.exhausted === 'requests' ? '0' : String(RATE_LIMIT_REQUESTS - 1),
    'x-ratelimit-remaining-tokens': opts.exhausted === 'tokens' ? '0' : String(RATE_LIMIT_TOKENS - (opts.tokens ?? 0)),
    'x-ratelimit-reset-requests': opts.exhausted === 'requests' ? reset : '6ms',
    'x-ratelimit-reset-tokens': opts.exhausted === 'tokens' ? reset : '0s',
  };
}

/** A retry-after header value (seconds) as an x-ratelimit-reset duration (`1s`, `6m0s`). */
export function resetDuration(retryAfter: string | undefined): string {
  const seconds = Number(retryAfter);
  if (!retryAfter || !Number.isFinite(seconds) || seconds < 0) return '1s';
  const s = Math.ceil(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
}
