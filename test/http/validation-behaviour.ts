import { describe, expect, it } from 'vitest';
import { chat, hello } from '../support/api-client.js';
import type { GatewayContext } from './gateway-context.js';

// Every field and range of the spec's request table, at and beyond its boundaries.

const accepted: Array<[string, Record<string, unknown>]> = [
  ['temperature 0', { temperature: 0 }],
  ['temperature 2', { temperature: 2 }],
  ['top_p 0', { top_p: 0 }],
  ['top_p 1', { top_p: 1 }],
  ['presence_penalty -2', { presence_penalty: -2 }],
  ['presence_penalty 2', { presence_penalty: 2 }],
  ['frequency_penalty -2', { frequency_penalty: -2 }],
  ['frequency_penalty 2', { frequency_penalty: 2 }],
  ['4 stop sequences', { stop: ['a', 'b', 'c', 'd'] }],
  ['a stop string', { stop: 'END' }],
  ['n 1', { n: 1 }],
  ['n 16 (the documented maximum)', { n: 16 }],
  ['max_tokens 1', { max_tokens: 1 }],
  ['5 fallbacks', { fallbacks: ['svc/beta', 'svc/gamma', 'svc/delta', 'svc/epsilon', 'svc/zeta'] }],
  ['user', { user: 'end-user-42' }],
  ['seed and response_format', { seed: 7, response_format: { type: 'json_object' } }],
  ['tool_choice none', { tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'none' }],
  ['tool_choice naming a tool', { tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'f' } } }],
];

const refused: Array<[string, Record<string, unknown>, string, string]> = [
  ['temperature below 0', { temperature: -0.1 }, 'temperature', 'invalid_value'],
  ['temperature above 2', { temperature: 2.01 }, 'temperature', 'invalid_value'],
  ['temperature as a string', { temperature: '1' }, 'temperature', 'invalid_value'],
  ['top_p above 1', { top_p: 1.5 }, 'top_p', 'invalid_value'],
  ['top_p below 0', { top_p: -0.5 }, 'top_p', 'invalid_value'],
  ['temperature and top_p together', { temperature: 1, top_p: 0.5 }, 'top_p', 'invalid_value'],
  ['presence_penalty below -2', { presence_penalty: -2.5 }, 'presence_penalty', 'invalid_value'],
  ['presence_penalty above 2', { presence_penalty: 2.5 }, 'presence_penalty', 'invalid_value'],
  ['frequency_penalty below -2', { frequency_penalty: -3 }, 'frequency_penalty', 'invalid_value'],
  ['frequency_penalty above 2', { frequency_penalty: 2.0001 }, 'frequency_penalty', 'invalid_value'],
  ['5 stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', 'invalid_value'],
  ['n 0', { n: 0 }, 'n', 'invalid_value'],
  ['n 17', { n: 17 }, 'n', 'invalid_value'],
  ['n fractional', { n: 1.5 }, 'n', 'invalid_value'],
  ['max_tokens 0', { max_tokens: 0 }, 'max_tokens', 'invalid_value'],
  ['max_tokens fractional', { max_tokens: 10.5 }, 'max_tokens', 'invalid_value'],
  ['stream not a boolean', { stream: 'yes' }, 'stream', 'invalid_value'],
  ['6 fallbacks', { fallbacks: ['svc/beta', 'svc/gamma', 'svc/delta', 'svc/epsilon', 'svc/zeta', 'svc/eta'] }, 'fallbacks', 'invalid_value'],
  ['a fallback without the svc/ prefix', { fallbacks: ['beta'] }, 'fallbacks[0]', 'invalid_value'],
  ['model without the svc/ prefix', { model: 'alpha' }, 'model', 'invalid_value'],
  ['model missing', { model: undefined }, 'model', 'missing_required_parameter'],
  ['messages missing', { messages: undefined }, 'messages', 'missing_required_parameter'],
  ['messages empty', { messages: [] }, 'messages', 'invalid_value'],
  ['an unknown role', { messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role', 'invalid_value'],
  ['a message without content', { messages: [{ role: 'user' }] }, 'messages[0].content', 'missing_required_parameter'],
  ['a tool message without tool_call_id', { messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id', 'missing_required_parameter'],
  ['an empty assistant message', { messages: [{ role: 'assistant' }] }, 'messages[0].content', 'invalid_value'],
  ['tool_choice naming a missing tool', { tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } }, 'tool_choice', 'invalid_value'],
  ['tool_choice as an unknown string', { tool_choice: 'sometimes' }, 'tool_choice', 'invalid_value'],
  ['a tool with a bad function name', { tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name', 'invalid_value'],
  ['an unknown field', { temperature_boost: 3 }, 'temperature_boost', 'unknown_parameter'],
  ['stream_options without stream', { stream_options: { include_usage: true } }, 'stream_options', 'invalid_value'],
];

export function describeValidation(context: GatewayContext): void {
  describe('request validation', () => {
    const base = { model: 'svc/alpha', messages: hello };

    it.each(accepted)('accepts %s', async (_name, fields) => {
      const response = await chat(context.deployment, context.key.key, { ...base, ...fields });
      expect(response.status).toBe(200);
      await response.json();
    });

    it.each(refused)('refuses %s with 400 naming the parameter', async (_name, fields, param, code) => {
      const body: Record<string, unknown> = { ...base, ...fields };
      for (const [name, value] of Object.entries(fields)) if (value === undefined) delete body[name];
      const response = await chat(context.deployment, context.key.key, body);
      expect(response.status).toBe(400);
      const json = await response.json();
      expect(json.error).toMatchObject({ type: 'invalid_request_error', code, param });
      expect(typeof json.error.message).toBe('string');
      expect(context.double.requests).toHaveLength(0);
    });

    it('accepts every allowed role, with tool-call linkage', async () => {
      const response = await chat(context.deployment, context.key.key, {
        model: 'svc/alpha',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: '{"celsius":21}' },
        ],
      });
      expect(response.status).toBe(200);
      expect(context.double.requests[0]!.body.messages).toHaveLength(4);
    });

    it('answers 400 invalid_json to a body that is not JSON', async () => {
      const response = await chat(context.deployment, context.key.key, '{"model": "svc/alpha",');
      expect(response.status).toBe(400);
      expect((await response.json()).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
    });

    it('answers 400 to a JSON body that is not an object', async () => {
      const response = await chat(context.deployment, context.key.key, '[1,2]');
      expect(response.status).toBe(400);
      expect((await response.json()).error.code).toBe('invalid_value');
    });

    it('answers 413 to a body over the size limit', async () => {
      const big = 'x'.repeat(5 * 1024 * 1024);
      const response = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: [{ role: 'user', content: big }] });
      expect(response.status).toBe(413);
      expect((await response.json()).error).toMatchObject({ type: 'invalid_request_error', code: 'request_too_large' });
    });

    it('answers 404 model_not_found for an unknown model or fallback', async () => {
      const unknownModel = await chat(context.deployment, context.key.key, { model: 'svc/unheard-of', messages: hello });
      expect(unknownModel.status).toBe(404);
      expect((await unknownModel.json()).error).toMatchObject({ code: 'model_not_found', param: 'model' });
      const unknownFallback = await chat(context.deployment, context.key.key, { model: 'svc/alpha', fallbacks: ['svc/beta', 'svc/nope'], messages: hello });
      expect(unknownFallback.status).toBe(404);
      expect((await unknownFallback.json()).error).toMatchObject({ code: 'model_not_found', param: 'fallbacks[1]' });
    });

    it('answers 405 to other methods and 404 to unknown paths, in the error shape', async () => {
      const get = await fetch(`${context.deployment.url()}/v1/chat/completions`, { headers: { authorization: `Bearer ${context.key.key}` } });
      expect(get.status).toBe(405);
      expect((await get.json()).error.code).toBe('method_not_allowed');
      const unknown = await fetch(`${context.deployment.url()}/v2/anything`);
      expect(unknown.status).toBe(404);
      expect((await unknown.json()).error.code).toBe('not_found');
    });

    it('puts an x-request-id on every response, and /healthz needs no key', async () => {
      const health = await fetch(`${context.deployment.url()}/healthz`);
      expect(health.status).toBe(200);
      expect(health.headers.get('x-request-id')).toBeTruthy();
      const refused = await chat(context.deployment, 'nope', { model: 'svc/alpha', messages: hello });
      expect(refused.headers.get('x-request-id')).toBeTruthy();
    });
  });
}
