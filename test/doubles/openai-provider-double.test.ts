import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OPENAI_FIXTURES_DIR, startOpenAiProviderDouble, type OpenAiProviderDouble } from './openai-provider-double.js';
import { parseSseText, readSse } from './sse.js';

let double: OpenAiProviderDouble;
beforeAll(async () => {
  double = await startOpenAiProviderDouble();
});
afterAll(() => double.close());
afterEach(() => double.reset());

const post = (body: unknown, init: RequestInit = {}) =>
  fetch(`${double.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(body),
    ...init,
  });
const messages = [{ role: 'user', content: 'Say hello' }];
const dataJson = (raw: string) => parseSseText(raw).filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data));

describe('openai provider double', () => {
  it('answers non-streaming text in the chat.completion shape and records the request', async () => {
    const res = await post({ model: 'gpt-x', messages });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toMatch(/^\d+$/);
    const body = await res.json();
    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-x',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from gpt-x', refusal: null }, logprobs: null, finish_reason: 'stop' }],
    });
    expect(body.id).toMatch(/^chatcmpl-\w+$/);
    expect(Math.abs(body.created - Date.now() / 1000)).toBeLessThan(5);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    expect(Object.keys(body.usage)).toEqual(Object.keys(JSON.parse(readFileSync(`${OPENAI_FIXTURES_DIR}/openai-text.response.json`, 'utf8')).usage));
    expect(double.requests).toHaveLength(1);
    expect(double.requests[0]).toMatchObject({ model: 'gpt-x', body: { model: 'gpt-x', messages } });
    expect(double.requests[0].headers.authorization).toBe('Bearer sk-test');
  });

  it('streams with exact SSE framing, usage: null on chunks and a final usage-only chunk', async () => {
    double.script('m', { kind: 'text', chunks: ['Hi', ' there'], usage: { prompt_tokens: 7, completion_tokens: 2 } });
    const res = await post({ model: 'm', messages, stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const { events, raw } = await readSse(res);
    expect(raw).toMatch(/^data: \{.*\}\n\n/);
    expect(raw.endsWith('}\n\ndata: [DONE]\n\n')).toBe(true);
    expect(events.at(-1)).toEqual({ data: '[DONE]' });
    const chunks = dataJson(raw);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'm' && c.id === chunks[0].id)).toBe(true);
    expect(chunks.slice(0, -1).every((c) => c.usage === null && c.choices.length === 1)).toBe(true);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '', refusal: null });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hi there');
    expect(chunks.at(-2).choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } });
  });

  it('omits usage entirely without include_usage or with usage: omit', async () => {
    const plain = dataJson((await readSse(await post({ model: 'a', messages, stream: true }))).raw);
    expect(plain.every((c) => !('usage' in c) && c.choices.length === 1)).toBe(true);
    double.script('b', { kind: 'text', usage: 'omit' });
    const omitted = dataJson((await readSse(await post({ model: 'b', messages, stream: true, stream_options: { include_usage: true } }))).raw);
    expect(omitted.every((c) => c.usage === null && c.choices.length === 1)).toBe(true);
    expect('usage' in (await (await post({ model: 'b', messages })).json())).toBe(false);
  });

  it('streams tool-call deltas as in the fixtures, and answers them non-streaming', async () => {
    const args = '{"location":"Boston, MA"}';
    double.script('t', { kind: 'tool_call', name: 'get_weather', arguments: args, argumentChunks: 4, startIndex: 1 });
    const chunks = dataJson((await readSse(await post({ model: 't', messages, stream: true }))).raw);
    const first = chunks[0].choices[0].delta.tool_calls[0];
    expect(first).toMatchObject({ index: 1, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(first.id).toMatch(/^call_/);
    const rest = chunks.slice(1, -1).map((c) => c.choices[0].delta.tool_calls[0]);
    expect(rest).toHaveLength(4);
    expect(rest.every((d) => d.index === 1 && Object.keys(d).join() === 'index,function')).toBe(true);
    expect(rest.map((d) => d.function.arguments).join('')).toBe(args);
    expect(chunks.at(-1).choices[0]).toMatchObject({ delta: {}, finish_reason: 'tool_calls' });
    const body = await (await post({ model: 't', messages })).json();
    expect(body.choices[0]).toMatchObject({
      message: { content: null, tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: args } }] },
      finish_reason: 'tool_calls',
    });
  });

  it('answers n choices, interleaved when streaming', async () => {
    double.script('n', { kind: 'text', text: 'a b' });
    const body = await (await post({ model: 'n', messages, n: 2 })).json();
    expect(body.choices.map((c: any) => [c.index, c.message.content])).toEqual([[0, 'a b'], [1, 'a b']]);
    const chunks = dataJson((await readSse(await post({ model: 'n', messages, n: 2, stream: true }))).raw);
    expect(chunks.map((c) => c.choices[0].index)).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
  });

  it('takes scripted behaviours in order per model and repeats the last one', async () => {
    double.script('q', { kind: 'error', status: 429, retryAfter: '2' }, { kind: 'text', text: 'ok' });
    const first = await post({ model: 'q', messages });
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(first.headers.get('x-ratelimit-reset-requests')).toBe('2s');
    expect(await first.json()).toEqual({
      error: { message: expect.stringContaining('Rate limit reached for q'), type: 'requests', param: null, code: 'rate_limit_exceeded' },
    });
    for (let i = 0; i < 2; i++) expect((await (await post({ model: 'q', messages })).json()).choices[0].message.content).toBe('ok');
    expect(double.requests.map((r) => r.model)).toEqual(['q', 'q', 'q']);
  });

  it('enforces the api key in OpenAI error shape', async () => {
    const guarded = await startOpenAiProviderDouble({ apiKey: 'sk-right-key-123456' });
    try {
      const res = await fetch(`${guarded.url}/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-wrong-key-123456', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages }),
      });
      expect(res.status).toBe(401);
      expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', param: null, code: 'invalid_api_key' });
      const ok = await fetch(`${guarded.url}/models`, { headers: { authorization: 'Bearer sk-right-key-123456' } });
      expect(ok.status).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  it('hangs until the client aborts, and records the abort', async () => {
    double.script('h', { kind: 'hang' });
    await expect(post({ model: 'h', messages }, { signal: AbortSignal.timeout(100) })).rejects.toThrow();
    await expect.poll(() => double.aborted.map((a) => a.model)).toEqual(['h']);
  });

  it('sends headers then nothing for hang_after_headers', async () => {
    double.script('hh', { kind: 'hang_after_headers' });
    const controller = new AbortController();
    const res = await post({ model: 'hh', messages, stream: true }, { signal: controller.signal });
    expect(res.status).toBe(200);
    const reading = res.text();
    controller.abort();
    await expect(reading).rejects.toThrow();
    await expect.poll(() => double.aborted.length).toBe(1);
  });

  it('drops the socket mid-stream after the scripted content chunks', async () => {
    double.script('d', { kind: 'midstream_drop', chunksBeforeDrop: 2 });
    const res = await post({ model: 'd', messages, stream: true });
    const reader = res.body!.getReader();
    let raw = '';
    const decoder = new TextDecoder();
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          raw += decoder.decode(value, { stream: true });
        }
      })(),
    ).rejects.toThrow();
    const chunks = dataJson(raw);
    expect(chunks.map((c) => c.choices[0].delta.content)).toEqual(['', 'Hello', ' from']);
    expect(raw).not.toContain('[DONE]');
    expect(double.aborted).toHaveLength(0);
  });

  it('ends a stream with an error event and no [DONE] for midstream_error', async () => {
    double.script('e', { kind: 'midstream_error', chunksBeforeError: 1 });
    const { events, raw } = await readSse(await post({ model: 'e', messages, stream: true }));
    expect(raw).not.toContain('[DONE]');
    expect(events).toHaveLength(3);
    expect(JSON.parse(events[2].data)).toEqual({
      error: { message: expect.any(String), type: 'server_error', param: null, code: null },
    });
  });

  it('replays fixtures verbatim', async () => {
    double.script(
      'f',
      { kind: 'fixture', file: 'compat-alibaba-tool-call.chunks.jsonl' },
      { kind: 'fixture', file: 'compat-tool-call-index1.sse' },
      { kind: 'fixture', file: 'openai-text.response.json' },
    );
    const jsonl = readFileSync(`${OPENAI_FIXTURES_DIR}/compat-alibaba-tool-call.chunks.jsonl`, 'utf8').trim().split('\n');
    const { raw } = await readSse(await post({ model: 'f', messages, stream: true }));
    expect(raw).toBe(jsonl.map((l) => `data: ${l}\n\n`).join('') + 'data: [DONE]\n\n');
    expect((await readSse(await post({ model: 'f', messages, stream: true }))).raw).toBe(
      readFileSync(`${OPENAI_FIXTURES_DIR}/compat-tool-call-index1.sse`, 'utf8'),
    );
    expect(await (await post({ model: 'f', messages })).text()).toBe(readFileSync(`${OPENAI_FIXTURES_DIR}/openai-text.response.json`, 'utf8'));
    expect(() => double.script('f', { kind: 'fixture', file: 'nope.sse' })).toThrow(/not found/);
  });

  it('lists models and 404s unknown paths in OpenAI error shape', async () => {
    double.script('listed-model', { kind: 'text' });
    expect(await (await fetch(`${double.url}/models`)).json()).toMatchObject({ object: 'list', data: [{ id: 'listed-model', object: 'model' }] });
    const res = await fetch(`${double.url}/nope`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { message: 'Invalid URL (POST /v1/nope)', type: 'invalid_request_error', param: null, code: null } });
  });

  it('parses SSE text per the event-stream rules', () => {
    expect(parseSseText('event: x\ndata: a\ndata: b\n\n: comment\n\ndata:c\r\n\r\ndata: partial')).toEqual([
      { event: 'x', data: 'a\nb' },
      { data: 'c' },
    ]);
  });
});
