// Wire-faithful test double of the Gemini API (POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent?alt=sse, :embedContent and :batchEmbedContents), built on node:http. Shapes follow /work/shared/fixtures/gemini
// and FORMATS.md: `x-goog-api-key`, data-only SSE events each holding a whole
// GenerateContentResponse with only the new parts and no [DONE], google.rpc.Status error bodies
// (429 RESOURCE_EXHAUSTED with RetryInfo, 503 UNAVAILABLE, ...), a JSON error body on the alt=sse URL,
// and the protobuf-style 400 for any request field the API does not know.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultEmbeddingDimensions, fakeEmbedding } from './embedding-vectors.js';
import { SHARED_FIXTURES_DIR } from './openai-provider-double.js';
import { flattenHeaders, readJsonBody, startProviderDoubleServer, type ProviderDouble, type ProviderExchange } from './provider-double-server.js';

export const GEMINI_FIXTURES_DIR = path.join(SHARED_FIXTURES_DIR, 'gemini');

export interface GeminiUsageCounts {
  promptTokenCount: number;
  /** Over all candidates, as the API counts it. */
  candidatesTokenCount: number;
  thoughtsTokenCount?: number;
  /** Part of promptTokenCount served from the (implicit) cache. */
  cachedContentTokenCount?: number;
}

export type GeminiBehaviour =
  | { kind: 'text'; text?: string; chunks?: string[]; chunkDelayMs?: number; usage?: GeminiUsageCounts; finishReason?: string }
  | { kind: 'function_call'; name: string; args: Record<string, unknown>; usage?: GeminiUsageCounts }
  /** A google.rpc.Status error; 429 carries RetryInfo with `retryDelay` (default the fixture's "34.4s"). */
  | { kind: 'error'; status: number; message?: string; retryDelay?: string }
  /** `eventsBeforeDrop` text events, then the connection is cut. */
  | { kind: 'midstream_drop'; eventsBeforeDrop: number }
  | { kind: 'hang' }
  /** Replays a js-genai recording from fixtures/gemini (its `interaction`-th response, default 0). */
  | { kind: 'fixture'; file: string; interaction?: number };

export interface GeminiRecordedRequest {
  model: string;
  method: 'generateContent' | 'streamGenerateContent' | 'embedContent' | 'batchEmbedContents';
  query: string;
  body: any;
  headers: Record<string, string>;
}

/** Its `url` is `http://127.0.0.1:<port>/v1beta`; `aborted` holds the models of abandoned requests. */
export interface GeminiProviderDouble extends ProviderDouble<GeminiBehaviour, GeminiRecordedRequest, string> {}

const rpcStatuses: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const rpcMessages: Record<number, string> = {
  400: 'Request contains an invalid argument.',
  403: 'The caller does not have permission',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  503: 'The model is overloaded. Please try again later.',
  504: 'The request timed out. Please try again.',
};

const knownFields = new Set(['contents', 'systemInstruction', 'generationConfig', 'tools', 'toolConfig', 'safetySettings', 'cachedContent']);
const knownConfigFields = new Set([
  'temperature', 'topP', 'topK', 'maxOutputTokens', 'stopSequences', 'candidateCount', 'seed', 'presencePenalty', 'frequencyPenalty',
  'responseMimeType', 'responseSchema', 'responseLogprobs', 'logprobs', 'thinkingConfig',
]);

const roughTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));
const responseId = () => randomBytes(16).toString('base64url').slice(0, 22);

function rpcError(status: number, message: string, details?: unknown[]): string {
  return JSON.stringify({ error: { code: status, message, status: rpcStatuses[status] ?? 'UNKNOWN', ...(details ? { details } : {}) } }, null, 2);
}

interface Exchange extends ProviderExchange {
  sse: boolean;
  stream: boolean;
  body: any;
}

function send(ex: Exchange, status: number, text: string): void {
  if (ex.closed.signal.aborted) return;
  // Errors on the alt=sse URL keep the event-stream content type but carry a plain JSON body (recording-stream-error-404.json).
  const type = ex.sse ? 'text/event-stream' : 'application/json; charset=UTF-8';
  ex.res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(text)), server: 'scaffolding on HTTPServer2', vary: 'Origin, X-Origin, Referer' });
  ex.res.end(text);
}

/** What the API answers before generating; undefined when the request is acceptable. */
function validate(ex: Exchange, apiKey: string, keyParam: string | null): { status: number; message: string; details?: unknown[] } | undefined {
  const key = ex.req.headers['x-goog-api-key'] ?? keyParam;
  if (!key) {
    return { status: 403, message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API." };
  }
  if (key !== apiKey) {
    return {
      status: 400,
      message: 'API key not valid. Please pass a valid API key.',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } }],
    };
  }
  const body = ex.body;
  if (body === undefined) return { status: 400, message: 'Invalid JSON payload received. Unexpected token.' };
  for (const field of Object.keys(body)) {
    if (!knownFields.has(field)) return { status: 400, message: `Invalid JSON payload received. Unknown name "${field}": Cannot find field.` };
  }
  for (const field of Object.keys(body.generationConfig ?? {})) {
    if (!knownConfigFields.has(field)) return { status: 400, message: `Invalid JSON payload received. Unknown name "${field}" at 'generation_config': Cannot find field.` };
  }
  if (!Array.isArray(body.contents) || body.contents.length === 0) return { status: 400, message: '* GenerateContentRequest.contents: contents is not specified\n' };
  for (const content of body.contents) {
    if (content.role !== 'user' && content.role !== 'model') return { status: 400, message: 'Please use a valid role: user, model.' };
    for (const part of content.parts ?? []) {
      if (part.functionResponse && !part.functionResponse.name) return { status: 400, message: '* GenerateContentRequest.contents[].parts[].function_response.name: Name cannot be empty.\n' };
    }
  }
  return undefined;
}

function candidateCount(ex: Exchange): number {
  const count = ex.body.generationConfig?.candidateCount;
  return Number.isInteger(count) && count > 1 ? count : 1;
}

function promptTokens(ex: Exchange): number {
  return roughTokens(JSON.stringify(ex.body.contents) + JSON.stringify(ex.body.systemInstruction ?? '') + JSON.stringify(ex.body.tools ?? []));
}

function usageMetadata(usage: GeminiUsageCounts): Record<string, unknown> {
  const thoughts = usage.thoughtsTokenCount ?? 0;
  return {
    promptTokenCount: usage.promptTokenCount,
    candidatesTokenCount: usage.candidatesTokenCount,
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
    ...(usage.cachedContentTokenCount ? { cachedContentTokenCount: usage.cachedContentTokenCount } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: usage.promptTokenCount }],
    totalTokenCount: usage.promptTokenCount + usage.candidatesTokenCount + thoughts,
  };
}

/** Mid-stream events report only the prompt so far (recording-stream-max-tokens.json). */
function partialUsage(usage: GeminiUsageCounts): Record<string, unknown> {
  return { promptTokenCount: usage.promptTokenCount, promptTokensDetails: [{ modality: 'TEXT', tokenCount: usage.promptTokenCount }], totalTokenCount: usage.promptTokenCount };
}

function response(ex: Exchange, id: string, parts: unknown[], finishReason: string | undefined, usage: Record<string, unknown>): Record<string, unknown> {
  const count = candidateCount(ex);
  const candidates = Array.from({ length: count }, (_, index) => ({
    content: { parts, role: 'model' },
    ...(finishReason ? { finishReason } : {}),
    // Unstreamed answers always number their candidates; streamed ones only when there are several.
    ...(!ex.stream || count > 1 ? { index } : {}),
  }));
  return { candidates, usageMetadata: usage, modelVersion: ex.model, responseId: id };
}

function openStream(ex: Exchange): void {
  ex.res.writeHead(200, { 'content-type': 'text/event-stream', 'content-disposition': 'attachment', server: 'scaffolding on HTTPServer2', vary: 'Origin, X-Origin, Referer' });
  ex.res.flushHeaders();
}

/** alt=sse frames each response as one data-only event; without it the stream is a JSON array. */
async function writeEvents(ex: Exchange, events: unknown[], delayMs = 0): Promise<void> {
  openStream(ex);
  for (const [position, event] of events.entries()) {
    if (delayMs > 0) await sleep(delayMs, undefined, { signal: ex.closed.signal }).catch(() => undefined);
    if (ex.closed.signal.aborted) return;
    if (ex.sse) ex.res.write(`data: ${JSON.stringify(event)}\r\n\r\n`);
    else ex.res.write(`${position === 0 ? '[' : ',\r\n'}${JSON.stringify(event, null, 2)}`);
  }
  ex.res.end(ex.sse ? undefined : ']');
}

function splitWords(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [text];
}

async function answer(ex: Exchange, behaviour: GeminiBehaviour): Promise<void> {
  const id = responseId();
  switch (behaviour.kind) {
    case 'text': {
      const text = behaviour.text ?? behaviour.chunks?.join('') ?? `Hello from ${ex.model}`;
      const usage = behaviour.usage ?? { promptTokenCount: promptTokens(ex), candidatesTokenCount: roughTokens(text) * candidateCount(ex) };
      const finishReason = behaviour.finishReason ?? 'STOP';
      if (!ex.stream) return send(ex, 200, JSON.stringify(response(ex, id, [{ text }], finishReason, usageMetadata(usage)), null, 2));
      const pieces = behaviour.chunks ?? splitWords(text);
      const events = pieces.map((piece, index) => {
        const last = index === pieces.length - 1;
        return response(ex, id, [{ text: piece }], last ? finishReason : undefined, last ? usageMetadata(usage) : partialUsage(usage));
      });
      return writeEvents(ex, events, behaviour.chunkDelayMs);
    }
    case 'function_call': {
      const usage = behaviour.usage ?? { promptTokenCount: promptTokens(ex), candidatesTokenCount: 6 * candidateCount(ex) };
      // Calls arrive whole, in one event, and end with STOP (recording-stream-function-calling.json).
      const body = response(ex, id, [{ functionCall: { name: behaviour.name, args: behaviour.args } }], 'STOP', usageMetadata(usage));
      return ex.stream ? writeEvents(ex, [body]) : send(ex, 200, JSON.stringify(body, null, 2));
    }
    case 'error': {
      if (behaviour.status === 429) {
        const fixture = JSON.parse(readFileSync(path.join(GEMINI_FIXTURES_DIR, 'error-429-retry-info.json'), 'utf8'));
        const retry = fixture.error.details.find((detail: any) => detail['@type'].endsWith('RetryInfo'));
        if (behaviour.retryDelay !== undefined) retry.retryDelay = behaviour.retryDelay;
        if (behaviour.message) fixture.error.message = behaviour.message;
        return send(ex, 429, JSON.stringify(fixture, null, 2));
      }
      return send(ex, behaviour.status, rpcError(behaviour.status, behaviour.message ?? rpcMessages[behaviour.status] ?? 'Error'));
    }
    case 'midstream_drop': {
      if (!ex.stream) return send(ex, 500, rpcError(500, rpcMessages[500]!));
      const usage = { promptTokenCount: promptTokens(ex), candidatesTokenCount: 0 };
      openStream(ex);
      const frames = Array.from({ length: behaviour.eventsBeforeDrop }, (_, index) => `data: ${JSON.stringify(response(ex, id, [{ text: index === 0 ? 'Partial' : ` piece${index}` }], undefined, partialUsage(usage)))}\r\n\r\n`);
      ex.res.write(frames.join(''), () => ex.req.socket.destroy());
      return;
    }
    case 'hang':
      return;
    case 'fixture': {
      const recording = JSON.parse(readFileSync(path.join(GEMINI_FIXTURES_DIR, behaviour.file), 'utf8'));
      const recorded = recording.interactions[behaviour.interaction ?? 0].response;
      if (recorded.statusCode !== 200) return send(ex, recorded.statusCode, JSON.stringify(recorded.bodySegments[0], null, 2));
      if (!ex.stream) return send(ex, 200, JSON.stringify(recorded.bodySegments[0], null, 2));
      return writeEvents(ex, recorded.bodySegments);
    }
  }
}

const routePattern = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const embedPattern = /^\/v1beta\/models\/([^/:]+):(embedContent|batchEmbedContents)$/;
const embedFields = new Set(['model', 'content', 'taskType', 'title', 'outputDimensionality']);

/** An EmbedContentRequest's problem, as the API words it; undefined when it is acceptable. */
function embedProblem(request: any, model: string): string | undefined {
  for (const field of Object.keys(request ?? {})) if (!embedFields.has(field)) return `Invalid JSON payload received. Unknown name "${field}": Cannot find field.`;
  if (request?.model !== undefined && request.model !== `models/${model}`) return `Model name in the request (${request.model}) does not match the model in the URL (models/${model}).`;
  const text = request?.content?.parts?.map((part: any) => part.text ?? '').join('');
  if (!text) return '* EmbedContentRequest.content: contents is not specified\n';
  return undefined;
}

/** :embedContent answers {embedding:{values}}, :batchEmbedContents {embeddings:[{values}]}; neither reports usage. */
function answerEmbeddings(ex: Exchange, batch: boolean, behaviour: GeminiBehaviour): void {
  const requests: any[] = batch ? ex.body?.requests : [ex.body];
  if (!Array.isArray(requests) || requests.length === 0) return send(ex, 400, rpcError(400, '* BatchEmbedContentsRequest.requests: requests is not specified\n'));
  for (const request of requests) {
    const problem = embedProblem(request, ex.model);
    if (problem) return send(ex, 400, rpcError(400, problem));
  }
  if (behaviour.kind === 'hang') return;
  if (behaviour.kind === 'error') return send(ex, behaviour.status, rpcError(behaviour.status, behaviour.message ?? rpcMessages[behaviour.status] ?? 'Error'));
  const vectors = requests.map((request) => ({ values: fakeEmbedding(ex.model, request.content.parts.map((part: any) => part.text).join(''), request.outputDimensionality ?? defaultEmbeddingDimensions) }));
  send(ex, 200, JSON.stringify(batch ? { embeddings: vectors } : { embedding: vectors[0] }, null, 2));
}

export async function startGeminiProviderDouble(options: { apiKey: string }): Promise<GeminiProviderDouble> {
  return startProviderDoubleServer<GeminiBehaviour, GeminiRecordedRequest, string>({
    basePath: '/v1beta',
    unscripted: { kind: 'text' },
    abandoned: (exchange) => exchange.model,
    failureBody: (error) => rpcError(500, `gemini double failure: ${String(error)}`),
    async handle(exchange, double) {
      const url = new URL(exchange.req.url ?? '/', 'http://double');
      const embed = embedPattern.exec(url.pathname);
      if (embed && exchange.req.method === 'POST') {
        const ex: Exchange = Object.assign(exchange, { model: embed[1]!, stream: false, sse: false, body: (await readJsonBody(exchange.req)).json });
        double.requests.push({ model: ex.model, method: embed[2] as 'embedContent' | 'batchEmbedContents', query: url.search, body: ex.body, headers: flattenHeaders(ex.req.headers) });
        if (ex.req.headers['x-goog-api-key'] !== options.apiKey) return send(ex, 400, rpcError(400, 'API key not valid. Please pass a valid API key.'));
        return answerEmbeddings(ex, embed[2] === 'batchEmbedContents', double.next(ex.model));
      }
      const route = routePattern.exec(url.pathname);
      const ex: Exchange = Object.assign(exchange, {
        model: route?.[1] ?? '',
        stream: route?.[2] === 'streamGenerateContent',
        sse: route?.[2] === 'streamGenerateContent' && url.searchParams.get('alt') === 'sse',
        body: undefined as any,
      });
      ex.body = (await readJsonBody(ex.req)).json;
      const method = ex.stream ? 'streamGenerateContent' : 'generateContent';
      double.requests.push({ model: ex.model, method, query: url.search, body: ex.body, headers: flattenHeaders(ex.req.headers) });
      if (ex.req.method !== 'POST' || !route) return send(ex, 404, rpcError(404, `models/${ex.model || 'unknown'} is not found for API version v1beta, or is not supported for generateContent.`));
      const invalid = validate(ex, options.apiKey, url.searchParams.get('key'));
      if (invalid) return send(ex, invalid.status, rpcError(invalid.status, invalid.message, invalid.details));
      await answer(ex, double.next(ex.model));
    },
  });
}
