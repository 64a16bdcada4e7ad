import { describe, expect, it } from 'vitest';
import { useGateway } from './http/gateway-context.js';
import { chat, createKey } from './support/api-client.js';

// What a request reserves before it goes upstream, seen through the 402 message and the
// x-ratelimit-*-tokens headers. Images, audio, files and response_format schemas count by the
// bounds in src/shared/input-token-bounds.ts; text beyond the first 128 Ki characters of a request
// counts as its UTF-8 bytes (an upper bound on any byte-level BPE count) instead of being encoded
// on the event loop. svc/alpha costs $1 per million prompt tokens and $2 per million completion tokens.

const context = useGateway('embedded');

const question = { type: 'text', text: 'What is in this file?' };
const base64 = (bytes: number) => Buffer.alloc(bytes, 7).toString('base64');

async function ask(budgetUsd: number, content: unknown, extra: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  const key = await createKey(context.deployment, { name: 'bounds', budget_usd: budgetUsd });
  const response = await chat(context.deployment, key.key, { model: 'svc/alpha', max_tokens: 10, messages: [{ role: 'user', content }], ...extra });
  return { status: response.status, body: await response.json() };
}

describe('non-text input in the reservation', () => {
  it('an image reserves the largest per-image rule of any provider (48,169 tokens)', async () => {
    const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${base64(64)}` } };
    expect((await ask(0.04, [question])).status).toBe(200);
    const refused = await ask(0.04, [question, image]);
    expect(refused.status).toBe(402);
    expect(refused.body.error.message).toMatch(/could cost up to \$0\.0482\d*/);
  });

  it('an image with detail low reserves 2,833 tokens', async () => {
    const image = { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } };
    const refused = await ask(0.002, [question, image]);
    expect(refused.status).toBe(402);
    expect(refused.body.error.message).toMatch(/could cost up to \$0\.0028\d*/);
  });

  it('audio reserves a token per 15 bytes it decodes to', async () => {
    const audio = { type: 'input_audio', input_audio: { data: base64(150_000), format: 'wav' } };
    const refused = await ask(0.005, [question, audio]);
    expect(refused.status).toBe(402);
    // 150,000 bytes: 10,000 tokens, $0.01.
    expect(refused.body.error.message).toMatch(/could cost up to \$0\.0100\d*/);
  });

  it('a file reserves 4 tokens per byte plus one page image; a file by id a large context', async () => {
    const file = { type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${base64(7_500)}` } };
    const refused = await ask(0.05, [question, file]);
    expect(refused.status).toBe(402);
    // 30,000 + 48,169 tokens, plus the text and max_tokens.
    expect(refused.body.error.message).toMatch(/could cost up to \$0\.0782\d*/);
    const byId = await ask(0.1, [question, { type: 'file', file: { file_id: 'file-abc' } }]);
    expect(byId.status).toBe(402);
    expect(byId.body.error.message).toMatch(/could cost up to \$0\.200\d*/);
  });

  it('a response_format JSON schema counts as text', async () => {
    const schema = { type: 'object', description: 'the weather report of one city, word for word '.repeat(400), properties: { city: { type: 'string' } } };
    const plain = await ask(0.002, 'What is the weather?');
    expect(plain.status).toBe(200);
    const refused = await ask(0.002, 'What is the weather?', { response_format: { type: 'json_schema', json_schema: { name: 'weather', schema } } });
    expect(refused.status).toBe(402);
  });
});

describe('large prompts', () => {
  const tpm = 10_000_000;

  async function reservedTokens(text: string): Promise<number> {
    const key = await createKey(context.deployment, { name: 'large prompt', tpm });
    const response = await chat(context.deployment, key.key, { model: 'svc/alpha', max_tokens: 10, messages: [{ role: 'user', content: text }] });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    return tpm - Number(response.headers.get('x-ratelimit-remaining-tokens'));
  }

  it('beyond 128 Ki characters a prompt reserves its UTF-8 bytes instead of being encoded', async () => {
    const text = 'hello wörld, the gateway routes '.repeat(32 * 1024);
    // 3 for the reply, 4 for the message, the role's 4 bytes, the text's bytes, then max_tokens.
    expect(await reservedTokens(text)).toBe(3 + 4 + 4 + Buffer.byteLength(text) + 10);
  });

  it('a prompt under the threshold is still counted by the tokenizer', async () => {
    const text = 'hello world, the gateway routes '.repeat(2 * 1024);
    const reserved = await reservedTokens(text);
    expect(reserved).toBeLessThan(Buffer.byteLength(text) / 3);
  });
});
