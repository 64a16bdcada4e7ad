import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createKey, eventually } from '../support/api-client.js';
import type { GatewayContext } from './gateway-context.js';

// POST /v1/responses through the official openai client, against a Chat Completions provider
// double: the Responses request is translated, the answer rendered back as a response object or
// as the Responses stream, stored per key and continued with previous_response_id. When scaled
// out, consecutive requests go to different ingress processes.

export function describeResponsesApi(context: GatewayContext): void {
  const client = (key = context.key.key) => new OpenAI({ baseURL: `${context.deployment.url()}/v1`, apiKey: key, maxRetries: 0 });
  const weather = { type: 'function' as const, name: 'get_weather', description: 'Weather of a city', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

  describe('responses.create', () => {
    it('answers a string input with a response whose output_text the SDK derives', async () => {
      context.double.script('alpha', { kind: 'text', text: 'Hello there, friend', usage: { prompt_tokens: 7, completion_tokens: 4 } });
      const response = await client().responses.create({ model: 'svc/alpha', input: 'Say hello', instructions: 'Be brief.' });
      expect(response.id).toMatch(/^resp_[0-9a-f]{32}$/);
      expect(response.status).toBe('completed');
      expect(response.output_text).toBe('Hello there, friend');
      expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
      expect(response.usage).toMatchObject({ input_tokens: 7, output_tokens: 4, total_tokens: 11, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
      const upstream = context.double.requests.at(-1)!.body;
      expect(upstream.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }]);
    });

    it('passes a JSON schema text format on as response_format and returns the JSON', async () => {
      context.double.script('alpha', { kind: 'text', text: '{"city":"Paris","temp":21}' });
      const schema = { type: 'object', properties: { city: { type: 'string' }, temp: { type: 'number' } }, required: ['city', 'temp'], additionalProperties: false };
      const response = await client().responses.create({ model: 'svc/alpha', input: 'Weather?', text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } } });
      expect(JSON.parse(response.output_text)).toEqual({ city: 'Paris', temp: 21 });
      expect(context.double.requests.at(-1)!.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'weather', schema, strict: true } });
    });

    it('round-trips a function call through previous_response_id', async () => {
      context.double.script('alpha', { kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Oslo"}' });
      const first = await client().responses.create({ model: 'svc/alpha', input: 'Weather in Oslo?', tools: [weather] });
      const call = first.output.find((item) => item.type === 'function_call')!;
      expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' });
      context.double.script('alpha', { kind: 'text', text: 'It is 3 degrees in Oslo.' });
      const second = await client().responses.create({
        model: 'svc/alpha',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"celsius":3}' }],
        tools: [weather],
      });
      expect(second.output_text).toBe('It is 3 degrees in Oslo.');
      expect(second.previous_response_id).toBe(first.id);
      const messages = context.double.requests.at(-1)!.body.messages;
      expect(messages).toEqual([
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: call.call_id, content: '{"celsius":3}' },
      ]);
    });

    it('round-trips a function call with the full input items and store: false', async () => {
      context.double.script('alpha', { kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Rome"}' });
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'Weather in Rome?' }];
      const first = await client().responses.create({ model: 'svc/alpha', input, tools: [weather], store: false });
      const call = first.output.find((item) => item.type === 'function_call')!;
      context.double.script('alpha', { kind: 'text', text: 'Sunny in Rome.' });
      const second = await client().responses.create({
        model: 'svc/alpha',
        input: [...input, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
        tools: [weather],
        store: false,
      });
      expect(second.output_text).toBe('Sunny in Rome.');
      expect(context.double.requests.at(-1)!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: call.call_id, content: 'sunny' });
      await expect(client().responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    });

    it('drops hosted tools the target cannot run instead of failing', async () => {
      context.double.script('alpha', { kind: 'text', text: 'No search needed.' });
      const response = await client().responses.create({ model: 'svc/alpha', input: 'Hi', tools: [{ type: 'web_search' }, weather] });
      expect(response.output_text).toBe('No search needed.');
      expect(context.double.requests.at(-1)!.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual(['get_weather']);
    });

    it('falls back to the next model when the first fails before its first token', async () => {
      context.double.script('alpha', { kind: 'error', status: 503, message: 'overloaded' });
      context.double.script('beta', { kind: 'text', text: 'Beta answered' });
      const params = { model: 'svc/alpha', input: 'Hi', fallbacks: ['svc/beta'] } as OpenAI.Responses.ResponseCreateParamsNonStreaming;
      const response = await client().responses.create(params);
      expect(response.output_text).toBe('Beta answered');
      expect(context.double.requests.map((request) => request.model)).toEqual(['alpha', 'beta']);
    });

    it('refuses invalid requests with the parameter named', async () => {
      await expect(client().responses.create({ model: 'svc/alpha', input: [{ role: 'robot' as 'user', content: 'Hi' }] })).rejects.toMatchObject({ status: 400, param: 'input[0].role' });
      await expect(client().responses.create({ model: 'svc/alpha', input: 'Hi', temperature: 3 })).rejects.toMatchObject({ status: 400, param: 'temperature' });
      context.double.script('alpha', { kind: 'text', text: 'Not background' });
      const plain = await client().responses.create({ model: 'svc/alpha', input: 'Hi' });
      const replay = await fetch(`${context.deployment.url()}/v1/responses/${plain.id}?stream=true`, { headers: { authorization: `Bearer ${context.key.key}` } });
      expect(replay.status).toBe(400);
      expect((await replay.json()).error).toMatchObject({ type: 'invalid_request_error', param: 'stream' });
      await expect(client().responses.cancel(plain.id)).rejects.toMatchObject({ status: 400 });
    });

    it('answers errors in the OpenAI shape', async () => {
      await expect(client().responses.create({ model: 'svc/no-such-model', input: 'Hi' })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
      await expect(client().responses.create({ model: 'svc/alpha', input: 'Hi', previous_response_id: 'resp_0123456789abcdef0123456789abcdef' })).rejects.toMatchObject({ status: 404, param: 'previous_response_id' });
      context.double.script('alpha', { kind: 'error', status: 400, message: 'bad things' });
      await expect(client().responses.create({ model: 'svc/alpha', input: 'Hi' })).rejects.toMatchObject({ status: 400 });
    });
  });

  describe('responses.stream', () => {
    it('sends the events in OpenAI\'s order, numbered, with the same text as the non-streamed answer', async () => {
      context.double.script('alpha', { kind: 'text', chunks: ['The ', 'quick ', 'fox'] });
      const whole = await client().responses.create({ model: 'svc/alpha', input: 'Tell me' });
      context.double.script('alpha', { kind: 'text', chunks: ['The ', 'quick ', 'fox'] });
      const stream = client().responses.stream({ model: 'svc/alpha', input: 'Tell me' });
      const types: string[] = [];
      const sequence: number[] = [];
      let text = '';
      for await (const event of stream) {
        types.push(event.type);
        sequence.push(event.sequence_number);
        if (event.type === 'response.output_text.delta') text += event.delta;
      }
      const final = await stream.finalResponse();
      expect(text).toBe(whole.output_text);
      expect(final.output_text).toBe(whole.output_text);
      expect(sequence).toEqual(sequence.map((_, index) => index));
      const deltas = types.filter((type) => type === 'response.output_text.delta').length;
      expect(deltas).toBeGreaterThanOrEqual(1);
      expect(types.filter((type) => type !== 'response.output_text.delta')).toEqual([
        'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
        'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
      ]);
      expect(final.usage?.output_tokens).toBeGreaterThan(0);
    });

    it('streams a function call whose arguments the SDK reassembles', async () => {
      context.double.script('alpha', { kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Lima"}', argumentChunks: 4 });
      const stream = client().responses.stream({ model: 'svc/alpha', input: 'Weather in Lima?', tools: [weather] });
      const argumentDeltas: string[] = [];
      stream.on('response.function_call_arguments.delta', (event) => argumentDeltas.push(event.delta));
      const final = await stream.finalResponse();
      expect(argumentDeltas.join('')).toBe('{"city":"Lima"}');
      expect(final.output[0]).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Lima"}' });
    });

    it('stops the upstream call when a streaming client (not background) disconnects', async () => {
      context.double.script('alpha', { kind: 'text', chunks: Array.from({ length: 40 }, (_, index) => `w${index} `), chunkDelayMs: 100 });
      const controller = new AbortController();
      const response = await fetch(`${context.deployment.url()}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${context.key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc/alpha', input: 'Go on', stream: true }),
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      let text = '';
      while (!text.includes('response.output_text.delta')) text += new TextDecoder().decode((await reader.read()).value);
      const responseId = /"id":"(resp_[0-9a-f]+)"/.exec(text)![1]!;
      const abortedAt = Date.now();
      controller.abort();
      await eventually(() => expect(context.double.aborted).toHaveLength(1), 1000);
      expect(Date.now() - abortedAt).toBeLessThan(1000);
      await eventually(async () => expect((await client().responses.retrieve(responseId)).status).toBe('cancelled'));
    });

    it('ends a stream whose provider fails after the first token with an error the SDK raises', async () => {
      context.double.script('alpha', { kind: 'midstream_error', chunksBeforeError: 2 });
      const stream = client().responses.stream({ model: 'svc/alpha', input: 'Go' });
      await expect(stream.finalResponse()).rejects.toThrow();
    });
  });

  describe('stored responses', () => {
    it('retrieves, lists input items and deletes a stored response, for its own key only', async () => {
      context.double.script('alpha', { kind: 'text', text: 'Stored answer' });
      const created = await client().responses.create({ model: 'svc/alpha', input: [{ role: 'user', content: 'Remember me' }], metadata: { ticket: '42' } });
      const retrieved = await client().responses.retrieve(created.id);
      expect(retrieved.output_text).toBe('Stored answer');
      expect(retrieved.metadata).toEqual({ ticket: '42' });
      const items = await client().responses.inputItems.list(created.id);
      expect(items.data).toHaveLength(1);
      expect(items.data[0]).toMatchObject({ type: 'message', role: 'user', content: 'Remember me' });
      const other = await createKey(context.deployment, { name: 'other key' });
      await expect(client(other.key).responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
      await expect(client(other.key).responses.create({ model: 'svc/alpha', input: 'Hi', previous_response_id: created.id })).rejects.toMatchObject({ status: 404 });
      await expect(client(other.key).responses.delete(created.id)).rejects.toMatchObject({ status: 404 });
      await client().responses.delete(created.id);
      await expect(client().responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    });

    it('resolves item references against the key\'s stored output items', async () => {
      context.double.script('alpha', { kind: 'text', text: 'First answer' });
      const first = await client().responses.create({ model: 'svc/alpha', input: 'Question one' });
      context.double.script('alpha', { kind: 'text', text: 'Second answer' });
      await client().responses.create({
        model: 'svc/alpha',
        input: [{ role: 'user', content: 'Question one' }, { type: 'item_reference', id: first.output[0]!.id! }, { role: 'user', content: 'Question two' }],
      });
      expect(context.double.requests.at(-1)!.body.messages).toEqual([
        { role: 'user', content: 'Question one' },
        { role: 'assistant', content: [{ type: 'text', text: 'First answer' }] },
        { role: 'user', content: 'Question two' },
      ]);
      await expect(client().responses.create({ model: 'svc/alpha', input: [{ type: 'item_reference', id: 'msg_unknown' }] })).rejects.toMatchObject({ status: 404 });
    });
  });
}
