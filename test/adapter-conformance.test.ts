import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../src/ingress/surfaces/chat-completions/chat-request-schema.js';
import { chatToInternal } from '../src/ingress/surfaces/chat-completions/chat-to-internal.js';
import type { ProviderApi, ProviderConfig } from '../src/shared/catalog/catalog-types.js';
import { GatewayError } from '../src/shared/errors.js';
import { adapterFor } from '../src/shared/providers/chat-adapter-registry.js';
import type { AdapterContext, CompletionChoice, FailureKind, FinishReason, ChatAdapter, StreamPart, UpstreamFailure } from '../src/shared/providers/chat-adapter.js';
import { SseDecoder } from '../src/shared/providers/sse-decoder.js';
import type { Usage } from '../src/shared/usage.js';

// One suite, the same cases for every wire format. Recorded fixtures are replayed where they exist;
// elsewhere bodies are built by hand following /work/shared/fixtures/FORMATS.md.

const fixtures = new URL('../../shared/fixtures/', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, fixtures), 'utf8');
const fixture = (path: string): any => JSON.parse(read(path));
const jsonl = (path: string): unknown[] => read(path).split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
/** OpenAI-style framing: one data event per chunk, then [DONE]. */
const openAiSse = (chunks: unknown[], done = true): string => chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('') + (done ? 'data: [DONE]\n\n' : '');
/** Anthropic framing: a named event whose name repeats the payload's type. */
const anthropicSse = (events: Array<Record<string, unknown>>): string => events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join('');
/** Gemini alt=sse framing, with the CRLF separators Google's front end sends. */
const geminiSse = (events: unknown[]): string => events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`).join('');
const geminiSegments = (path: string, interaction = 0): any[] => fixture(path).interactions[interaction].response.bodySegments;

/** A choice's text (null when it has none) and tool calls, as a Chat Completions client sees them. */
function messageOf(choice: CompletionChoice): { content: string | null; tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> } {
  let content: string | null = null;
  const calls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
  for (const part of choice.parts) {
    if (part.type === 'text') content = (content ?? '') + part.text;
    if (part.type === 'tool_call') calls.push({ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } });
  }
  return calls.length > 0 ? { content, tool_calls: calls } : { content };
}

const commonChatRequest: ChatRequest = {
  model: 'svc/conformance',
  messages: [
    { role: 'system', content: 'Answer briefly.' },
    { role: 'user', content: 'What is the weather in Paris and in Rome?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_paris', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_rome', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_paris', content: '{"temperature_c":18}' },
    { role: 'tool', tool_call_id: 'call_rome', content: 'sunny' },
  ],
  tools: [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Current weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
      },
    },
  ],
  tool_choice: 'auto',
  temperature: 0.8,
  max_completion_tokens: 256,
  stop: ['END'],
};

const commonRequest = chatToInternal(commonChatRequest);

function provider(api: ProviderApi, baseUrl: string, extra: Partial<ProviderConfig> = {}): ProviderConfig {
  return { name: api, api, baseUrl, apiKey: 'test-key', headers: {}, timeouts: { connectMs: 1000, firstTokenMs: 1000, totalMs: 1000 }, ...extra };
}

/** Feeds wire bytes through the shared SSE decoder in `chunkSize` pieces, then ends the stream as the worker does. */
function replay(adapter: ChatAdapter, context: AdapterContext, wire: string, chunkSize = 7): StreamPart[] {
  const bytes = new TextEncoder().encode(wire);
  const decoder = new SseDecoder();
  const translator = adapter.createStreamTranslator(context);
  const parts: StreamPart[] = [];
  for (let offset = 0; offset < bytes.length; offset += chunkSize) {
    for (const event of decoder.push(bytes.subarray(offset, offset + chunkSize))) parts.push(...translator.push(event));
  }
  for (const event of decoder.end()) parts.push(...translator.push(event));
  parts.push(...(translator.finish?.() ?? []));
  return parts;
}

interface Assembled {
  content: Record<number, string>;
  toolCalls: Record<number, Array<{ id?: string; name?: string; arguments: string }>>;
  finish: Record<number, FinishReason>;
  usage?: Usage;
  errors: UpstreamFailure[];
  ended: boolean;
}

/** Rebuilds what a client would see from the parts, as an OpenAI SDK accumulates chunks. */
function assemble(parts: StreamPart[]): Assembled {
  const result: Assembled = { content: {}, toolCalls: {}, finish: {}, errors: [], ended: false };
  for (const part of parts) {
    expect(result.ended, 'nothing may follow the end part').toBe(false);
    if (part.type === 'delta') {
      if (part.content) result.content[part.index] = (result.content[part.index] ?? '') + part.content;
      for (const call of part.toolCalls ?? []) {
        const calls = (result.toolCalls[part.index] ??= []);
        const entry = (calls[call.index] ??= { arguments: '' });
        if (call.id) entry.id = call.id;
        if (call.function?.name) entry.name = (entry.name ?? '') + call.function.name;
        entry.arguments += call.function?.arguments ?? '';
      }
    } else if (part.type === 'finish') result.finish[part.index] = part.finishReason;
    else if (part.type === 'usage') result.usage = part.usage;
    else if (part.type === 'error') result.errors.push(part.failure);
    else result.ended = true;
  }
  return result;
}

interface ErrorCase {
  status: number;
  headers?: Record<string, string>;
  body: string;
  kind: FailureKind;
  retryAfter?: number;
}

interface Conformance {
  api: ProviderApi;
  context: AdapterContext;
  checkRequest(url: string, headers: Record<string, string>, body: any): void;
  streamUrl: string;
  toolChoiceOf(body: any): unknown;
  toolChoices: { auto: unknown; required: unknown; none: unknown; named: unknown };
  text: { body: string; content: string; usage: [number, number, number] };
  tool: { body: string; name: string; args: unknown; id: RegExp | string };
  usage: { body: string; expected: Usage };
  streamText: { wire: string; content: string; finish: FinishReason; usage: [number, number, number] };
  streamTool: { wire: string; name: string; arguments: string; content?: string; usage: [number, number, number] };
  finishReasons: Array<[string, FinishReason]>;
  responseFinishing(wire: string): string;
  streamFinishing(wire: string): string;
  errors: { rateLimit: ErrorCase; overloaded: ErrorCase; badRequest: ErrorCase; auth: ErrorCase };
  midStream: { wire: string; kind: FailureKind; contentBefore: string };
}

const usageOf = (usage: Usage | undefined): [number, number, number] | undefined => usage && [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens];
const openAiFinishes: Array<[string, FinishReason]> = ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'].map((reason) => [reason, reason as FinishReason]);
const openAiChunk = (choice: Record<string, unknown>) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, ...choice }] });
const openAiFinishResponse = (reason: string) => JSON.stringify({ id: 'c', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: reason }] });
const openAiFinishStream = (reason: string) => openAiSse([openAiChunk({ delta: { content: 'x' } }), openAiChunk({ delta: {}, finish_reason: reason })]);
const observed = fixture('openai/error-bodies.observed.json');
const midStreamText = openAiChunk({ delta: { content: 'Partial' }, finish_reason: null });

const openAiCase: Conformance = {
  api: 'openai',
  context: { provider: provider('openai', 'https://api.openai.test/v1'), upstreamModel: 'gpt-4.1-mini', stream: false },
  checkRequest(url, headers, body) {
    expect(url).toBe('https://api.openai.test/v1/chat/completions');
    expect(headers.authorization).toBe('Bearer test-key');
    expect(body).toMatchObject({ model: 'gpt-4.1-mini', messages: commonChatRequest.messages, tools: commonChatRequest.tools, temperature: 0.8, max_completion_tokens: 256, stop: ['END'] });
  },
  streamUrl: 'https://api.openai.test/v1/chat/completions',
  toolChoiceOf: (body) => body.tool_choice,
  toolChoices: { auto: 'auto', required: 'required', none: 'none', named: { type: 'function', function: { name: 'get_weather' } } },
  text: { body: read('openai/spec-example-chat-completion.response.json'), content: 'Hello! How can I assist you today?', usage: [19, 10, 29] },
  tool: { body: read('openai/spec-example-tool-calls.response.json'), name: 'get_current_weather', args: { location: 'Boston, MA' }, id: 'call_abc123' },
  usage: {
    body: read('openai/openai-text.response.json'),
    expected: { prompt_tokens: 16, completion_tokens: 363, total_tokens: 379, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } },
  },
  streamText: {
    wire: openAiSse(jsonl('openai/openai-text.include_usage.chunks.jsonl')),
    content: (jsonl('openai/openai-text.include_usage.chunks.jsonl') as any[]).map((chunk) => chunk.choices[0]?.delta?.content ?? '').join(''),
    finish: 'stop',
    usage: (() => { const u = (jsonl('openai/openai-text.include_usage.chunks.jsonl').at(-1) as any).usage; return [u.prompt_tokens, u.completion_tokens, u.total_tokens]; })(),
  },
  streamTool: { wire: openAiSse(jsonl('openai/compat-alibaba-tool-call.chunks.jsonl')), name: 'weather', arguments: '{"location": "San Francisco"}', usage: [295, 22, 317] },
  finishReasons: openAiFinishes,
  responseFinishing: openAiFinishResponse,
  streamFinishing: openAiFinishStream,
  errors: {
    rateLimit: { status: 429, headers: { 'retry-after': '20' }, body: JSON.stringify(observed['429_rate_limit_exceeded_tpm'].body), kind: 'rate_limit', retryAfter: 20 },
    overloaded: { status: 503, body: JSON.stringify({ error: { message: 'The engine is currently overloaded, please try again later', type: 'server_error', param: null, code: null } }), kind: 'overloaded' },
    badRequest: { status: 400, body: read('openai/error-400-unsupported-parameter.json'), kind: 'bad_request' },
    auth: { status: 401, body: JSON.stringify(observed['401_invalid_api_key'].body), kind: 'auth' },
  },
  midStream: { wire: openAiSse([midStreamText], false) + read('openai/openrouter-midstream-error.sse'), kind: 'server_error', contentBefore: 'Partial' },
};

const azureChunks = jsonl('openai/azure-openai-model-router.chunks.jsonl') as any[];
const azureFilter = azureChunks[0];
const azureChoiceFilter = azureChunks[2].choices[0].content_filter_results;
const azureToolStream = [
  azureFilter,
  openAiChunk({ delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_az1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, content_filter_results: {} }),
  ...['{"ci', 'ty": "Co', 'penhagen"}'].map((fragment) => openAiChunk({ delta: { tool_calls: [{ index: 0, function: { arguments: fragment } }] }, content_filter_results: {} })),
  openAiChunk({ delta: {}, finish_reason: 'tool_calls', content_filter_results: {} }),
  { ...openAiChunk({}), choices: [], usage: { prompt_tokens: 60, completion_tokens: 18, total_tokens: 78 } },
];
const azureCompletion = (message: Record<string, unknown>, finishReason: string) =>
  JSON.stringify({
    id: 'chatcmpl-az', object: 'chat.completion', created: 1762317021, model: 'gpt-4o-2024-11-20', prompt_filter_results: azureFilter.prompt_filter_results,
    choices: [{ index: 0, content_filter_results: azureChoiceFilter, finish_reason: finishReason, logprobs: null, message: { role: 'assistant', refusal: null, ...message } }],
    usage: { prompt_tokens: 25, completion_tokens: 9, total_tokens: 34, prompt_tokens_details: { cached_tokens: 0 } },
  });

const azureCase: Conformance = {
  ...openAiCase,
  api: 'azure',
  context: { provider: provider('azure', 'https://contoso.openai.azure.com'), upstreamModel: 'gpt-4o-prod', stream: false },
  checkRequest(url, headers, body) {
    expect(url).toBe('https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21');
    expect(headers['api-key']).toBe('test-key');
    expect(headers.authorization).toBeUndefined();
    expect(body).toMatchObject({ messages: commonChatRequest.messages, tools: commonChatRequest.tools, tool_choice: 'auto', temperature: 0.8 });
  },
  streamUrl: 'https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21',
  text: { body: azureCompletion({ content: 'Copenhagen.' }, 'stop'), content: 'Copenhagen.', usage: [25, 9, 34] },
  tool: { body: azureCompletion({ content: null, tool_calls: [{ id: 'call_az1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Copenhagen"}' } }] }, 'tool_calls'), name: 'get_weather', args: { city: 'Copenhagen' }, id: 'call_az1' },
  usage: { body: azureCompletion({ content: 'x' }, 'stop'), expected: { prompt_tokens: 25, completion_tokens: 9, total_tokens: 34, prompt_tokens_details: { cached_tokens: 0 } } },
  streamText: { wire: openAiSse(azureChunks), content: 'Capital of Denmark.', finish: 'stop', usage: [15, 78, 93] },
  streamTool: { wire: openAiSse(azureToolStream), name: 'get_weather', arguments: '{"city": "Copenhagen"}', usage: [60, 18, 78] },
  errors: {
    rateLimit: {
      status: 429, headers: { 'retry-after': '6' }, kind: 'rate_limit', retryAfter: 6,
      body: JSON.stringify({ error: { code: '429', message: 'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds.' } }),
    },
    overloaded: { status: 503, body: JSON.stringify({ error: { code: 'ServiceUnavailable', message: 'The service is temporarily unable to process your request. Please try again later.' } }), kind: 'overloaded' },
    badRequest: {
      status: 400, kind: 'bad_request',
      body: JSON.stringify({ error: { message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", type: null, param: 'prompt', code: 'content_filter', status: 400 } }),
    },
    auth: { status: 401, body: JSON.stringify({ error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } }), kind: 'auth' },
  },
  midStream: {
    wire: openAiSse([azureFilter, midStreamText], false) + `data: ${JSON.stringify({ error: { message: 'The server had an error processing your request.', type: 'server_error', param: null, code: null } })}\n\n`,
    kind: 'server_error', contentBefore: 'Partial',
  },
};

const anthropicBasic = read('anthropic/stream-basic.sse');
const anthropicMessage = (content: unknown[], stopReason: string, usage: Record<string, number> = { input_tokens: 10, output_tokens: 5 }) =>
  JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content, stop_reason: stopReason, stop_sequence: null, usage });
const anthropicError = (type: string, message: string) => JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy' });

const anthropicCase: Conformance = {
  api: 'anthropic',
  context: { provider: provider('anthropic', 'https://api.anthropic.test/v1'), upstreamModel: 'claude-sonnet-4-5', stream: false, maxOutputTokens: 64000 },
  checkRequest(url, headers, body) {
    expect(url).toBe('https://api.anthropic.test/v1/messages');
    expect(headers).toMatchObject({ 'x-api-key': 'test-key', 'anthropic-version': '2023-06-01' });
    expect(body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      system: [{ type: 'text', text: 'Answer briefly.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What is the weather in Paris and in Rome?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'call_paris', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'call_rome', name: 'get_weather', input: { city: 'Rome' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_paris', content: '{"temperature_c":18}' },
            { type: 'tool_result', tool_use_id: 'call_rome', content: 'sunny' },
          ],
        },
      ],
      stop_sequences: ['END'],
      temperature: 0.4,
      tools: [{ name: 'get_weather', description: 'Current weather for a city', input_schema: commonChatRequest.tools![0]!.function.parameters }],
      tool_choice: { type: 'auto' },
    });
  },
  streamUrl: 'https://api.anthropic.test/v1/messages',
  toolChoiceOf: (body) => body.tool_choice,
  toolChoices: { auto: { type: 'auto' }, required: { type: 'any' }, none: { type: 'none' }, named: { type: 'tool', name: 'get_weather' } },
  text: { body: read('anthropic/message-text.response.json'), content: fixture('anthropic/message-text.response.json').content[0].text, usage: [12, 29, 41] },
  tool: { body: read('anthropic/message-tool-use.response.json'), name: 'json', args: fixture('anthropic/message-tool-use.response.json').content[0].input, id: 'toolu_01Q9ExVZnzZj7E2QQYHYtNUa' },
  usage: {
    body: anthropicMessage([{ type: 'text', text: 'x' }], 'end_turn', { input_tokens: 10, cache_creation_input_tokens: 200, cache_read_input_tokens: 1000, output_tokens: 50 }),
    expected: { prompt_tokens: 1210, completion_tokens: 50, total_tokens: 1260, prompt_tokens_details: { cached_tokens: 1000, cache_creation_tokens: 200 } },
  },
  streamText: { wire: anthropicBasic, content: 'Hello there!', finish: 'stop', usage: [11, 6, 17] },
  streamTool: { wire: read('anthropic/stream-tool-use.sse'), name: 'get_weather', arguments: '{"location": "Paris"}', content: "I'll check the current weather in Paris for you.", usage: [377, 65, 442] },
  finishReasons: [['end_turn', 'stop'], ['stop_sequence', 'stop'], ['pause_turn', 'stop'], ['max_tokens', 'length'], ['model_context_window_exceeded', 'length'], ['tool_use', 'tool_calls'], ['refusal', 'content_filter']],
  responseFinishing: (reason) => anthropicMessage([{ type: 'text', text: 'x' }], reason),
  streamFinishing: (reason) =>
    anthropicSse([
      { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 3, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: 2 } },
      { type: 'message_stop' },
    ]),
  errors: {
    rateLimit: { status: 429, headers: { 'retry-after': '30' }, body: anthropicError('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'), kind: 'rate_limit', retryAfter: 30 },
    overloaded: { status: 529, body: anthropicError('overloaded_error', 'Overloaded'), kind: 'overloaded' },
    badRequest: { status: 400, body: anthropicError('invalid_request_error', 'messages: roles must alternate between "user" and "assistant"'), kind: 'bad_request' },
    auth: { status: 401, body: anthropicError('authentication_error', 'invalid x-api-key'), kind: 'auth' },
  },
  midStream: { wire: anthropicBasic.slice(0, anthropicBasic.indexOf('event: content_block_stop')) + read('anthropic/stream-error-overloaded.sse'), kind: 'overloaded', contentBefore: 'Hello there!' },
};

const geminiResponse = (parts: unknown[], finishReason: string) =>
  JSON.stringify({ candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }], usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 1, totalTokenCount: 5 }, responseId: 'r1' });
const rpcError = (code: number, status: string, message: string, details?: unknown[]) => JSON.stringify({ error: { code, message, status, ...(details ? { details } : {}) } });
const maxTokenSegments = geminiSegments('gemini/recording-stream-max-tokens.json');
const functionCallSegment = geminiSegments('gemini/recording-stream-function-calling.json')[0];

const geminiCase: Conformance = {
  api: 'gemini',
  context: { provider: provider('gemini', 'https://generativelanguage.test/v1beta'), upstreamModel: 'gemini-2.5-flash', stream: false },
  checkRequest(url, headers, body) {
    expect(url).toBe('https://generativelanguage.test/v1beta/models/gemini-2.5-flash:generateContent');
    expect(headers['x-goog-api-key']).toBe('test-key');
    expect(body).toEqual({
      systemInstruction: { parts: [{ text: 'Answer briefly.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'What is the weather in Paris and in Rome?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] },
        {
          role: 'user',
          parts: [{ functionResponse: { name: 'get_weather', response: { temperature_c: 18 } } }, { functionResponse: { name: 'get_weather', response: { content: 'sunny' } } }],
        },
      ],
      generationConfig: { temperature: 0.8, maxOutputTokens: 256, stopSequences: ['END'] },
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Current weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }] }],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    });
  },
  streamUrl: 'https://generativelanguage.test/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
  toolChoiceOf: (body) => body.toolConfig,
  toolChoices: {
    auto: { functionCallingConfig: { mode: 'AUTO' } },
    required: { functionCallingConfig: { mode: 'ANY' } },
    none: { functionCallingConfig: { mode: 'NONE' } },
    named: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
  },
  text: { body: JSON.stringify(geminiSegments('gemini/recording-generate-system-instruction.json')[0]), content: 'low', usage: [9, 21, 30] },
  tool: { body: JSON.stringify(functionCallSegment), name: 'customDivide', args: { denominator: 2, numerator: 100 }, id: /^call_[0-9a-f]{24}$/ },
  usage: {
    body: JSON.stringify(geminiSegments('gemini/recording-generate-system-instruction.json')[0]),
    expected: { prompt_tokens: 9, completion_tokens: 21, total_tokens: 30, completion_tokens_details: { reasoning_tokens: 20 } },
  },
  streamText: { wire: geminiSse(maxTokenSegments), content: maxTokenSegments.map((segment) => segment.candidates[0].content.parts[0].text).join(''), finish: 'length', usage: [6, 20, 26] },
  streamTool: { wire: geminiSse([functionCallSegment]), name: 'customDivide', arguments: '{"denominator":2,"numerator":100}', usage: [21, 6, 27] },
  finishReasons: [
    ['STOP', 'stop'], ['RECITATION', 'stop'], ['OTHER', 'stop'], ['MALFORMED_FUNCTION_CALL', 'stop'], ['MAX_TOKENS', 'length'], ['SAFETY', 'content_filter'],
    ['BLOCKLIST', 'content_filter'], ['PROHIBITED_CONTENT', 'content_filter'], ['SPII', 'content_filter'], ['LANGUAGE', 'content_filter'], ['IMAGE_SAFETY', 'content_filter'],
  ],
  responseFinishing: (reason) => geminiResponse([{ text: 'x' }], reason),
  streamFinishing: (reason) => geminiSse([JSON.parse(geminiResponse([{ text: 'x' }], reason))]),
  errors: {
    rateLimit: { status: 429, body: read('gemini/error-429-retry-info.json'), kind: 'rate_limit', retryAfter: 34.4 },
    overloaded: { status: 503, body: rpcError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'), kind: 'overloaded' },
    badRequest: { status: 400, body: rpcError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Unknown name "foo": Cannot find field.'), kind: 'bad_request' },
    // Gemini answers a wrong key with 400 INVALID_ARGUMENT; only the ErrorInfo reason says it is auth.
    auth: {
      status: 400, kind: 'auth',
      body: rpcError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }]),
    },
  },
  midStream: { wire: geminiSse([maxTokenSegments[0]]) + `data: ${rpcError(500, 'INTERNAL', 'An internal error has occurred.')}\r\n\r\n`, kind: 'server_error', contentBefore: 'The' },
};

const cases = [openAiCase, azureCase, anthropicCase, geminiCase];
const streaming = (c: Conformance): AdapterContext => ({ ...c.context, stream: true });

describe.each(cases)('$api adapter conformance', (c) => {
  const adapter = adapterFor(c.api);

  it('builds the request from a conversation with a system prompt, tool calls and tool results', () => {
    const http = adapter.buildRequest(commonRequest, c.context);
    expect(http.method).toBe('POST');
    expect(http.headers['content-type']).toBe('application/json');
    c.checkRequest(http.url, http.headers, JSON.parse(http.body));
  });

  it('builds the streaming request', () => {
    const http = adapter.buildRequest(commonRequest, streaming(c));
    expect(http.url).toBe(c.streamUrl);
    expect(http.headers.accept).toBe('text/event-stream');
    if (c.api !== 'gemini') expect(JSON.parse(http.body).stream).toBe(true);
  });

  it('maps every tool_choice form', () => {
    const forms = { auto: 'auto', required: 'required', none: 'none', named: { type: 'function', function: { name: 'get_weather' } } } as const;
    for (const [form, choice] of Object.entries(forms)) {
      const body = JSON.parse(adapter.buildRequest(chatToInternal({ ...commonChatRequest, tool_choice: choice }), c.context).body);
      expect(c.toolChoiceOf(body), form).toEqual(c.toolChoices[form as keyof typeof forms]);
    }
  });

  it('parses a text response', () => {
    const completion = adapter.parseResponse(c.text.body, c.context);
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]).toMatchObject({ index: 0, finishReason: 'stop' });
    expect(messageOf(completion.choices[0]!)).toEqual({ content: c.text.content });
    expect(usageOf(completion.usage)).toEqual(c.text.usage);
  });

  it('parses a tool-call response', () => {
    const [choice] = adapter.parseResponse(c.tool.body, c.context).choices;
    expect(choice!.finishReason).toBe('tool_calls');
    expect(messageOf(choice!).tool_calls).toHaveLength(1);
    const call = messageOf(choice!).tool_calls![0]!;
    expect(call).toMatchObject({ type: 'function', function: { name: c.tool.name } });
    expect(call.id).toMatch(c.tool.id);
    expect(JSON.parse(call.function.arguments)).toEqual(c.tool.args);
    expect(messageOf(adapter.parseResponse(c.tool.body, c.context).choices[0]!).tool_calls![0]!.id, 'ids are stable').toBe(call.id);
  });

  it('reports usage in OpenAI terms', () => {
    expect(adapter.parseResponse(c.usage.body, c.context).usage).toEqual(c.usage.expected);
  });

  it('streams text split into 7-byte chunks', () => {
    const parts = replay(adapter, streaming(c), c.streamText.wire);
    const result = assemble(parts);
    expect(result.errors).toEqual([]);
    expect(result.content[0]).toBe(c.streamText.content);
    expect(result.finish).toEqual({ 0: c.streamText.finish });
    expect(usageOf(result.usage)).toEqual(c.streamText.usage);
    expect(parts.at(-1)).toEqual({ type: 'end' });
    expect(parts.filter((part) => part.type === 'usage')).toHaveLength(1);
  });

  it('streams a tool call whose arguments reassemble to the exact JSON', () => {
    const result = assemble(replay(adapter, streaming(c), c.streamTool.wire));
    expect(result.errors).toEqual([]);
    expect(result.toolCalls[0]).toHaveLength(1);
    expect(result.toolCalls[0]![0]).toMatchObject({ name: c.streamTool.name, arguments: c.streamTool.arguments });
    expect(result.toolCalls[0]![0]!.id).toBeTruthy();
    expect(result.content[0]).toBe(c.streamTool.content);
    expect(result.finish).toEqual({ 0: 'tool_calls' });
    expect(usageOf(result.usage)).toEqual(c.streamTool.usage);
    expect(result.ended).toBe(true);
  });

  it('yields the same parts however the bytes are split', () => {
    for (const wire of [c.streamText.wire, c.streamTool.wire, c.midStream.wire]) {
      const whole = replay(adapter, streaming(c), wire, Number.MAX_SAFE_INTEGER);
      expect(replay(adapter, streaming(c), wire, 1)).toEqual(whole);
      expect(replay(adapter, streaming(c), wire, 7)).toEqual(whole);
    }
  });

  it('maps every finish reason, in responses and in streams', () => {
    for (const [wire, expected] of c.finishReasons) {
      expect(adapter.parseResponse(c.responseFinishing(wire), c.context).choices[0]!.finishReason, wire).toBe(expected);
      expect(assemble(replay(adapter, streaming(c), c.streamFinishing(wire))).finish, wire).toEqual({ 0: expected });
    }
  });

  it.each(['rateLimit', 'overloaded', 'badRequest', 'auth'] as const)('classifies the %s error', (name) => {
    const error = c.errors[name];
    const failure = adapter.parseError(error.status, error.headers ?? {}, error.body);
    expect(failure.kind).toBe(error.kind);
    expect(failure.status).toBe(error.status);
    expect(failure.message).not.toMatch(/^\s*\{/);
    expect(failure.message.length).toBeGreaterThan(0);
    if (error.retryAfter !== undefined) expect(failure.retryAfterSeconds).toBe(error.retryAfter);
  });

  it('turns an error after the stream began into an error part', () => {
    const result = assemble(replay(adapter, streaming(c), c.midStream.wire));
    expect(result.content[0]).toBe(c.midStream.contentBefore);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]!.kind).toBe(c.midStream.kind);
    expect(result.ended).toBe(false);
  });
});

describe('Anthropic request details', () => {
  const adapter = adapterFor('anthropic');
  const body = (request: Partial<ChatRequest>, context: Partial<AdapterContext> = {}) =>
    JSON.parse(adapter.buildRequest(chatToInternal({ ...commonChatRequest, ...request }), { ...anthropicCase.context, ...context }).body);

  it('halves OpenAI temperatures into Anthropic range', () => {
    expect(body({ temperature: 2 }).temperature).toBe(1);
    expect(body({ temperature: 0 }).temperature).toBe(0);
    expect(body({ temperature: undefined, top_p: 0.9 })).toMatchObject({ top_p: 0.9 });
  });

  it('takes max_tokens from the request, then the model, then 4096', () => {
    expect(body({ max_completion_tokens: undefined, max_tokens: 99 }).max_tokens).toBe(99);
    expect(body({ max_completion_tokens: undefined }).max_tokens).toBe(64000);
    expect(body({ max_completion_tokens: undefined }, { maxOutputTokens: undefined }).max_tokens).toBe(4096);
  });

  it('hoists developer messages, merges same-role turns and translates images', () => {
    const sent = body({
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'Be exact.' }] },
        { role: 'user', content: 'Look:' },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'image_url', image_url: { url: 'https://example.test/cat.jpg' } }] },
        { role: 'assistant', content: '', tool_calls: [{ id: 't1', type: 'function', function: { name: 'get_weather', arguments: '{not json' } }] },
      ],
    });
    expect(sent.system).toEqual([{ type: 'text', text: 'Be exact.' }]);
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look:' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.test/cat.jpg' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: {} }] },
    ]);
  });

  it('disables parallel tool use when parallel_tool_calls is false', () => {
    expect(body({ parallel_tool_calls: false }).tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(body({ parallel_tool_calls: false, tool_choice: 'required' }).tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(body({ parallel_tool_calls: false, tool_choice: undefined }).tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
  });

  it('refuses content parts Anthropic cannot take', () => {
    const audio = { role: 'user' as const, content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] };
    expect(() => body({ messages: [audio] })).toThrow(GatewayError);
  });

  it('passes on final usage but no end when the body stops before message_stop', () => {
    const upToStop = (wire: string) => wire.slice(0, wire.indexOf('event: message_stop'));
    const cut = replay(adapter, streaming(anthropicCase), upToStop(anthropicBasic));
    expect(cut.at(-1)).toEqual({ type: 'usage', usage: { prompt_tokens: 11, completion_tokens: 6, total_tokens: 17, prompt_tokens_details: { cached_tokens: 0 } } });
    expect(cut.some((part) => part.type === 'end')).toBe(false);
    const early = replay(adapter, streaming(anthropicCase), anthropicBasic.slice(0, anthropicBasic.indexOf('event: message_delta')));
    expect(early.some((part) => part.type === 'usage' || part.type === 'end')).toBe(false);
  });

  it('gives an argument-less streamed tool call parseable arguments', () => {
    const wire = anthropicSse([
      { type: 'message_start', message: { usage: { input_tokens: 5, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'now', input: {} } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } },
      { type: 'message_stop' },
    ]);
    expect(assemble(replay(adapter, streaming(anthropicCase), wire)).toolCalls[0]).toEqual([{ id: 'toolu_1', name: 'now', arguments: '{}' }]);
  });
});

describe('Gemini details', () => {
  const adapter = adapterFor('gemini');
  const body = (request: Partial<ChatRequest>) => JSON.parse(adapter.buildRequest(chatToInternal({ ...commonChatRequest, ...request }), geminiCase.context).body);

  it('fills generationConfig and translates JSON response formats', () => {
    const schema = { type: 'object', properties: { answer: { type: ['string', 'null'] } }, required: ['answer'], additionalProperties: false, $schema: 'x' };
    const sent = body({ n: 3, seed: 7, presence_penalty: 0.5, frequency_penalty: -0.5, top_p: 0.9, temperature: undefined, response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } });
    expect(sent.generationConfig).toEqual({
      topP: 0.9, maxOutputTokens: 256, stopSequences: ['END'], candidateCount: 3, presencePenalty: 0.5, frequencyPenalty: -0.5, seed: 7,
      responseMimeType: 'application/json', responseSchema: { type: 'object', properties: { answer: { type: 'string', nullable: true } }, required: ['answer'] },
    });
    expect(body({ response_format: { type: 'json_object' } }).generationConfig.responseMimeType).toBe('application/json');
  });

  it('sends data: images inline and refuses a tool result nobody asked for', () => {
    const sent = body({ messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } }] }] });
    expect(sent.contents).toEqual([{ role: 'user', parts: [{ text: 'What is this?' }, { inlineData: { mimeType: 'image/jpeg', data: '/9j/4AAQ' } }] }]);
    expect(() => body({ messages: [{ role: 'user', content: 'hi' }, { role: 'tool', tool_call_id: 'call_unknown', content: 'x' }] })).toThrow(GatewayError);
  });

  it('streams several candidates and ignores thought parts', () => {
    const event = (index: number, parts: unknown[], finishReason?: string) => ({ candidates: [{ index, content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}) }], responseId: 'r2' });
    const wire = geminiSse([
      { ...event(0, [{ text: 'thinking…', thought: true }, { text: 'A' }]), usageMetadata: { promptTokenCount: 3, totalTokenCount: 3 } },
      event(1, [{ text: 'B' }]),
      { ...event(0, [], 'STOP'), usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 } },
      { ...event(1, [], 'MAX_TOKENS'), usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, thoughtsTokenCount: 2, totalTokenCount: 9 } },
    ]);
    const parts = replay(adapter, streaming(geminiCase), wire);
    const result = assemble(parts);
    expect(result.content).toEqual({ 0: 'A', 1: 'B' });
    expect(result.finish).toEqual({ 0: 'stop', 1: 'length' });
    expect(usageOf(result.usage)).toEqual([3, 6, 9]);
    expect(parts.filter((part) => part.type === 'usage')).toHaveLength(2);
  });

  it('reports a blocked prompt as content_filter and a 404 recording as not_found', () => {
    const blocked = JSON.stringify({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 } });
    expect(adapter.parseResponse(blocked, geminiCase.context).choices[0]).toMatchObject({ parts: [], finishReason: "content_filter" });
    const notFound = fixture('gemini/recording-stream-error-404.json').interactions[0].response;
    const failure = adapter.parseError(notFound.statusCode, {}, JSON.stringify(notFound.bodySegments[0]));
    expect(failure).toMatchObject({ kind: 'not_found', status: 404, message: expect.stringContaining('custom-gemini-2.0-flash is not found') });
  });

  it('leaves the end out when the body stops before the finishReason', () => {
    const parts = replay(adapter, streaming(geminiCase), geminiSse(maxTokenSegments.slice(0, 2)));
    expect(parts.every((part) => part.type === 'delta')).toBe(true);
    expect(assemble(parts).content[0]).toBe('The sky is blue');
  });

  it('does not call a stream that failed a normal end', () => {
    const translator = adapter.createStreamTranslator(streaming(geminiCase));
    expect(translator.push({ data: rpcError(503, 'UNAVAILABLE', 'overloaded') })[0]).toMatchObject({ type: 'error', failure: { kind: 'overloaded' } });
    expect(translator.finish?.()).toEqual([]);
  });
});

describe('Azure OpenAI details', () => {
  it('turns the leading prompt_filter_results chunk into no parts', () => {
    const translator = adapterFor('azure').createStreamTranslator(streaming(azureCase));
    expect(translator.push({ data: JSON.stringify(azureFilter) })).toEqual([]);
  });

  it('uses the configured api-version', () => {
    const context = { ...azureCase.context, provider: provider('azure', 'https://contoso.openai.azure.com', { apiVersion: '2025-04-01-preview' }) };
    expect(adapterFor('azure').buildRequest(commonRequest, context).url).toBe('https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2025-04-01-preview');
  });
});

describe('adapterFor', () => {
  it('answers every provider API with an adapter declaring its choice support', () => {
    expect((['openai', 'azure', 'anthropic', 'gemini'] as const).map((api) => adapterFor(api).supportsMultipleChoices)).toEqual([true, true, false, true]);
  });
});
