// Wire-faithful test double of an OpenAI-format provider (POST /v1/chat/completions, POST
// /v1/embeddings, GET /v1/models, and Azure's POST /openai/deployments/{name}/embeddings), built on node:http. Shapes follow /work/shared/fixtures/openai (FORMATS.md, SOURCES.md).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  SSE_DONE, baseHeaders, chunk, completionBody, completionId, contentDelta, defaultError, errorBody, estimatePromptTokens,
  maskKey, resetDuration, roleDelta, roughTokens, splitEvenly, splitText, sseData, streamContext, toolCallArgsDelta,
  toolCallId, toolCallStartDelta, unixSeconds, usageChunk, type OpenAiErrorFields, type StreamContext, type TokenCounts,
} from './openai-provider-responses.js';
import { answerEmbeddings, azureDeploymentPattern } from './openai-embeddings-double.js';
import { flattenHeaders, readJsonBody, startProviderDoubleServer, type ProviderDouble, type ProviderExchange } from './provider-double-server.js';

/** `<root>/shared/fixtures/` for a clone at `<root>/main`. */
export const SHARED_FIXTURES_DIR = fileURLToPath(new URL('../../../shared/fixtures/', import.meta.url));
export const OPENAI_FIXTURES_DIR = path.join(SHARED_FIXTURES_DIR, 'openai');

export type ScriptedBehaviour =
  | {
      kind: 'text';
      /** Default `Hello from <model>` (or the concatenated `chunks`). */
      text?: string;
      /** Stream pieces; default: `text` split into words (leading space kept). */
      chunks?: string[];
      /** Delay before each content chunk; non-streaming answers wait `chunkDelayMs * pieces`. */
      chunkDelayMs?: number;
      /**
       * `'omit'`: no usage at all (no `usage` field, no usage-only chunk). `'max_tokens'`: the whole
       * output ceiling the request set (max_tokens or max_completion_tokens, times n) is billed, the
       * most a provider can charge. Default: estimated from text lengths.
       */
      usage?: TokenCounts | 'omit' | 'max_tokens';
      /** Default `stop`. */
      finishReason?: string;
    }
  | { kind: 'tool_call'; name: string; arguments: string; argumentChunks?: number; startIndex?: number }
  | { kind: 'error'; status: number; type?: string; code?: string | null; message?: string; param?: string | null; retryAfter?: string }
  | { kind: 'hang' }
  | { kind: 'hang_after_headers' }
  | { kind: 'midstream_drop'; chunksBeforeDrop: number }
  | { kind: 'midstream_error'; chunksBeforeError: number }
  | { kind: 'fixture'; file: string }
  /** Embeddings endpoints (any other kind but error and hang answers with default vectors too). */
  | { kind: 'embedding'; promptTokens?: number | 'omit'; dimensions?: number; count?: number };

export interface RecordedRequest {
  model: string;
  body: any;
  headers: Record<string, string>;
  receivedAt: number;
}

export interface AbortedRequest {
  model: string;
  at: number;
}

export interface OpenAiProviderDoubleOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401 invalid_api_key. */
  apiKey?: string;
}

/** Its `url` is `http://127.0.0.1:<port>/v1`. */
export interface OpenAiProviderDouble extends ProviderDouble<ScriptedBehaviour, RecordedRequest, AbortedRequest> {}

export interface Exchange extends ProviderExchange {
  body: any;
}

interface FixtureData {
  kind: 'sse' | 'jsonl' | 'json';
  content: string;
}

const DEFAULT_MODELS = ['gpt-4o-mini', 'gpt-4.1-nano'];

const defaultText = (model: string): string => `Hello from ${model}`;

export function resolveFixturePath(file: string): string {
  return path.isAbsolute(file) ? file : path.join(OPENAI_FIXTURES_DIR, file);
}

function loadFixture(file: string): FixtureData {
  const full = resolveFixturePath(file);
  if (!existsSync(full)) throw new Error(`openai double: fixture not found: ${full}`);
  const content = readFileSync(full, 'utf8');
  if (full.endsWith('.sse')) return { kind: 'sse', content };
  if (full.endsWith('.chunks.jsonl')) return { kind: 'jsonl', content };
  if (full.endsWith('.response.json')) return { kind: 'json', content };
  throw new Error(`openai double: unsupported fixture type (want .sse, .chunks.jsonl or .response.json): ${full}`);
}

export function sendJson(ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (ex.closed.signal.aborted) return;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  ex.res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  ex.res.end(text);
}

export function sendError(ex: Exchange, status: number, fields: OpenAiErrorFields, retryAfter?: string): void {
  const exhausted = status === 429 && (fields.type === 'requests' || fields.type === 'tokens') ? fields.type : undefined;
  const headers = baseHeaders({ exhausted, reset: resetDuration(retryAfter) });
  if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
  sendJson(ex, status, errorBody(fields), headers);
}

function openStream(ex: Exchange, tokens = 0): void {
  ex.res.writeHead(200, { ...baseHeaders({ tokens }), 'content-type': 'text/event-stream; charset=utf-8' });
  ex.res.flushHeaders();
}

/** Writes frames step by step (a step = one frame per choice), pausing `delayMs` before steps >= `delayFrom`. */
async function writeSteps(ex: Exchange, steps: string[][], delayMs = 0, delayFrom = 0): Promise<boolean> {
  for (let i = 0; i < steps.length; i++) {
    if (delayMs > 0 && i >= delayFrom) await sleep(delayMs, undefined, { signal: ex.closed.signal }).catch(() => undefined);
    if (ex.closed.signal.aborted) return false;
    for (const frame of steps[i]) ex.res.write(frame);
  }
  return !ex.closed.signal.aborted;
}

function dropConnection(ex: Exchange, lastFrame: string): void {
  ex.selfDestroyed = true;
  ex.res.write(lastFrame, () => ex.req.socket.destroy());
}

const perChoice = (n: number, frame: (index: number) => unknown): string[] =>
  Array.from({ length: n }, (_, i) => sseData(frame(i)));

/** Content pieces for drop/error behaviours: the default text's words, repeated as needed. */
function fillerPieces(model: string, count: number): string[] {
  const words = splitText(defaultText(model));
  return Array.from({ length: count }, (_, i) => (i < words.length ? words[i] : ` ${words[i % words.length].trim()}`));
}

function textUsage(b: Extract<ScriptedBehaviour, { kind: 'text' }>, ex: Exchange, text: string, n: number): TokenCounts | undefined {
  if (b.usage === 'omit') return undefined;
  if (b.usage === 'max_tokens') {
    const ceiling = Number(ex.body.max_completion_tokens ?? ex.body.max_tokens);
    // One prompt token: this mode is about the output ceiling (the gateway counts the prompt itself).
    return { prompt_tokens: 1, completion_tokens: ceiling * n };
  }
  if (b.usage) return b.usage;
  return { prompt_tokens: estimatePromptTokens(ex.body), completion_tokens: Math.max(1, roughTokens(text)) * n };
}

async function answerText(ex: Exchange, b: Extract<ScriptedBehaviour, { kind: 'text' }>, stream: boolean, n: number): Promise<void> {
  const text = b.text ?? (b.chunks ? b.chunks.join('') : defaultText(ex.model));
  const pieces = b.chunks ?? splitText(text);
  const finishReason = b.finishReason ?? 'stop';
  const usage = textUsage(b, ex, text, n);
  if (!stream) {
    const wait = (b.chunkDelayMs ?? 0) * pieces.length;
    if (wait > 0) await sleep(wait, undefined, { signal: ex.closed.signal }).catch(() => undefined);
    const body = completionBody({ id: completionId(), created: unixSeconds(), model: ex.model, n, text, finishReason, usage });
    sendJson(ex, 200, body, baseHeaders({ tokens: usage ? usage.prompt_tokens + usage.completion_tokens : 0 }));
    return;
  }
  const ctx = streamContext(ex.model, ex.body);
  const steps = [
    perChoice(n, (i) => chunk(ctx, i, roleDelta())),
    ...pieces.map((p) => perChoice(n, (i) => chunk(ctx, i, contentDelta(p)))),
    perChoice(n, (i) => chunk(ctx, i, {}, finishReason)),
  ];
  openStream(ex, usage ? usage.prompt_tokens : 0);
  if (!(await writeSteps(ex, steps, b.chunkDelayMs ?? 0, 1))) return;
  finishStream(ex, ctx, usage);
}

function finishStream(ex: Exchange, ctx: StreamContext, usage: TokenCounts | undefined): void {
  if (ctx.includeUsage && usage) ex.res.write(sseData(usageChunk(ctx, usage)));
  ex.res.end(SSE_DONE);
}

async function answerToolCall(ex: Exchange, b: Extract<ScriptedBehaviour, { kind: 'tool_call' }>, stream: boolean, n: number): Promise<void> {
  const call = { id: toolCallId(), name: b.name, arguments: b.arguments };
  const usage = {
    prompt_tokens: estimatePromptTokens(ex.body),
    completion_tokens: Math.max(1, roughTokens(b.name + b.arguments)) * n,
  };
  if (!stream) {
    const body = completionBody({ id: completionId(), created: unixSeconds(), model: ex.model, n, toolCall: call, finishReason: 'tool_calls', usage });
    sendJson(ex, 200, body, baseHeaders({ tokens: usage.prompt_tokens + usage.completion_tokens }));
    return;
  }
  const index = b.startIndex ?? 0;
  const fragments = splitEvenly(b.arguments, b.argumentChunks ?? 3);
  const ctx = streamContext(ex.model, ex.body);
  const steps = [
    perChoice(n, (i) => chunk(ctx, i, toolCallStartDelta(index, call))),
    ...fragments.map((f) => perChoice(n, (i) => chunk(ctx, i, toolCallArgsDelta(index, f)))),
    perChoice(n, (i) => chunk(ctx, i, {}, 'tool_calls')),
  ];
  openStream(ex, usage.prompt_tokens);
  if (!(await writeSteps(ex, steps))) return;
  finishStream(ex, ctx, usage);
}

/** Role chunk plus `count` content chunks, as SSE frames, for the interrupted-stream behaviours. */
function partialStream(ex: Exchange, n: number, count: number): string[] {
  const ctx = streamContext(ex.model, ex.body);
  return [
    ...perChoice(n, (i) => chunk(ctx, i, roleDelta())),
    ...fillerPieces(ex.model, count).flatMap((p) => perChoice(n, (i) => chunk(ctx, i, contentDelta(p)))),
  ];
}

async function answerFixture(ex: Exchange, fixture: FixtureData): Promise<void> {
  if (fixture.kind === 'json') {
    sendJson(ex, 200, fixture.content, baseHeaders());
    return;
  }
  openStream(ex);
  if (fixture.kind === 'sse') {
    ex.res.end(fixture.content);
    return;
  }
  const lines = fixture.content.split('\n').filter((l) => l.trim() !== '');
  if (!(await writeSteps(ex, lines.map((l) => [sseData(l)])))) return;
  ex.res.end(SSE_DONE);
}

async function answer(ex: Exchange, b: ScriptedBehaviour, fixtures: Map<ScriptedBehaviour, FixtureData>): Promise<void> {
  const stream = ex.body.stream === true;
  const n = Number.isInteger(ex.body.n) && ex.body.n > 1 ? (ex.body.n as number) : 1;
  switch (b.kind) {
    case 'text':
      return answerText(ex, b, stream, n);
    case 'tool_call':
      return answerToolCall(ex, b, stream, n);
    case 'error': {
      const d = defaultError(b.status, ex.model);
      const fields = {
        message: b.message ?? d.message,
        type: b.type ?? d.type,
        param: b.param !== undefined ? b.param : d.param,
        code: b.code !== undefined ? b.code : d.code,
      };
      return sendError(ex, b.status, fields, b.retryAfter);
    }
    case 'hang':
      return; // the response stays open until the client goes away or close() is called
    case 'hang_after_headers':
      if (stream) openStream(ex);
      else {
        ex.res.writeHead(200, { ...baseHeaders(), 'content-type': 'application/json' });
        ex.res.flushHeaders();
      }
      return;
    case 'midstream_drop': {
      if (!stream) {
        const body = JSON.stringify(completionBody({ id: completionId(), created: unixSeconds(), model: ex.model, n, text: defaultText(ex.model), finishReason: 'stop' }));
        ex.res.writeHead(200, { ...baseHeaders(), 'content-type': 'application/json' });
        return dropConnection(ex, body.slice(0, Math.floor(body.length / 2)));
      }
      const frames = partialStream(ex, n, b.chunksBeforeDrop);
      openStream(ex);
      for (const f of frames.slice(0, -1)) ex.res.write(f);
      return dropConnection(ex, frames[frames.length - 1]);
    }
    case 'midstream_error': {
      const fields = defaultError(500, ex.model);
      if (!stream) return sendError(ex, 500, fields);
      openStream(ex);
      for (const f of partialStream(ex, n, b.chunksBeforeError)) ex.res.write(f);
      ex.res.end(sseData(errorBody(fields)));
      return;
    }
    case 'fixture':
      return answerFixture(ex, fixtures.get(b) ?? loadFixture(b.file));
  }
}

export async function startOpenAiProviderDouble(options: OpenAiProviderDoubleOptions = {}): Promise<OpenAiProviderDouble> {
  const fixtures = new Map<ScriptedBehaviour, FixtureData>();

  const authFailure = (ex: Exchange): OpenAiErrorFields | undefined => {
    if (options.apiKey === undefined) return undefined;
    const auth = ex.req.headers.authorization;
    if (auth === `Bearer ${options.apiKey}`) return undefined;
    const given = auth?.replace(/^Bearer\s+/i, '');
    return {
      message: given
        ? `Incorrect API key provided: ${maskKey(given)}. You can find your API key at https://platform.openai.com/account/api-keys.`
        : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (i.e. providing the API key as the password field with HTTP basic auth). You can obtain an API key from https://platform.openai.com/account/api-keys.",
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_api_key',
    };
  };

  return startProviderDoubleServer<ScriptedBehaviour, RecordedRequest, AbortedRequest>({
    basePath: '/v1',
    unscripted: { kind: 'text' },
    keepAliveTimeout: 30_000,
    abandoned: (exchange) => ({ model: exchange.model, at: Date.now() }),
    failureBody: (err) => JSON.stringify(errorBody({ message: `openai double failure: ${String(err)}`, type: 'server_error', param: null, code: null })),
    onScript(behaviours) {
      for (const b of behaviours) if (b.kind === 'fixture') fixtures.set(b, loadFixture(b.file));
    },
    onReset: () => fixtures.clear(),
    async handle(exchange, double) {
      const receivedAt = Date.now();
      const ex: Exchange = Object.assign(exchange, { body: {} as any });
      const { raw, json: parsed, malformed: parseFailed } = await readJsonBody(ex.req);
      ex.body = parsed && typeof parsed === 'object' ? parsed : {};
      ex.model = typeof ex.body.model === 'string' ? ex.body.model : '';
      double.requests.push({ model: ex.model, body: parseFailed ? raw : parsed, headers: flattenHeaders(ex.req.headers), receivedAt });

      const route = `${ex.req.method} ${(ex.req.url ?? '/').split('?')[0]}`;
      const invalid = (message: string, param: string | null = null, code: string | null = null) =>
        sendError(ex, 400, { message, type: 'invalid_request_error', param, code });
      const azure = azureDeploymentPattern.exec(route);
      if (azure) {
        // Azure: the deployment in the path names the model, the key comes in api-key.
        ex.model = decodeURIComponent(azure[1]!);
        double.requests.at(-1)!.model = ex.model;
        if (options.apiKey !== undefined && ex.req.headers['api-key'] !== options.apiKey) return sendError(ex, 401, { message: 'Access denied due to invalid subscription key or wrong API endpoint.', type: 'invalid_request_error', param: null, code: '401' });
        return answerEmbeddings(ex, double.next(ex.model), parseFailed);
      }
      if (route === 'POST /v1/embeddings') {
        const embeddingAuthError = authFailure(ex);
        if (embeddingAuthError) return sendError(ex, 401, embeddingAuthError);
        return answerEmbeddings(ex, double.next(ex.model), parseFailed);
      }
      if (route !== 'POST /v1/chat/completions' && route !== 'GET /v1/models') {
        return sendError(ex, 404, { message: `Invalid URL (${route})`, type: 'invalid_request_error', param: null, code: null });
      }
      const authError = authFailure(ex);
      if (authError) return sendError(ex, 401, authError);
      if (route === 'GET /v1/models') {
        const scripted = double.scriptedModels();
        const ids = scripted.length > 0 ? scripted : DEFAULT_MODELS;
        return sendJson(ex, 200, { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 1686935002, owned_by: 'system' })) }, baseHeaders());
      }
      if (parseFailed || parsed === undefined) {
        return invalid(
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
        );
      }
      if (!ex.model) return invalid('you must provide a model parameter');
      if (!Array.isArray(ex.body.messages)) return invalid("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
      await answer(ex, double.next(ex.model), fixtures);
    },
  });
}
