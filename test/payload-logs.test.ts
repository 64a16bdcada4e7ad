import { describe, expect, it } from 'vitest';
import { adminRequest, chat, createKey, eventually } from './support/api-client.js';
import { useGateway } from './http/gateway-context.js';
import { scaledOutAvailable } from './support/scaled-harness.js';

// Opt-in request logs through the public interface: logging turned on for one key and left off
// (the default) for another, bodies read back through the admin API with secrets redacted,
// streams assembled, and the logs purged by age and by total size.

function describePayloadLogs(kind: 'embedded' | 'scaled') {
  describe(`${kind} deployment`, () => {
    const context = useGateway(kind, {
      // About 4 s of retention, a 6 KiB total bound and a purge every 300 ms, so the test sees both bounds act.
      SWITCHBOARD_PAYLOAD_RETENTION_DAYS: String(4 / 86_400),
      SWITCHBOARD_PAYLOAD_MAX_TOTAL_MB: String(6 / 1024),
      SWITCHBOARD_PAYLOAD_PURGE_INTERVAL_MS: '300',
    });

    const payloadOf = (id: string) => adminRequest(context.deployment, 'GET', `/admin/v1/requests/${id}/payload`);

    it('logs the bodies of a key that opted in, redacted, and nothing of a key that did not', async () => {
      const logged = await createKey(context.deployment, { name: 'logged key' });
      const plain = await createKey(context.deployment, { name: 'plain key' });
      const setting = await adminRequest(context.deployment, 'PUT', `/admin/v1/keys/${logged.id}/payload_logging`, { enabled: true });
      expect(setting).toEqual({ status: 200, body: { key_id: logged.id, payload_logging: true } });
      expect((await adminRequest(context.deployment, 'PUT', `/admin/v1/keys/${logged.id}/payload_logging`, { enabled: 'yes' })).status).toBe(400);

      context.double.script('alpha', { kind: 'text', text: 'logged answer', usage: { prompt_tokens: 5, completion_tokens: 2 } });
      const prompt = `debug this: my key is ${logged.key} and the upstream one is upstream-secret-key`;
      const response = await chat(context.deployment, logged.key, { model: 'svc/alpha', messages: [{ role: 'user', content: prompt }] });
      expect(response.status).toBe(200);
      const id = response.headers.get('x-request-id')!;
      const { status, body } = await eventually(async () => {
        const found = await payloadOf(id);
        expect(found.status).toBe(200);
        return found;
      });
      expect(status).toBe(200);
      expect(body).toMatchObject({ id, object: 'request_log', key_id: logged.id });
      const stored = JSON.stringify(body);
      expect(stored).toContain('debug this: my key is [redacted] and the upstream one is [redacted]');
      expect(stored).toContain('logged answer');
      for (const secret of [logged.key, 'upstream-secret-key', context.deployment.adminToken]) expect(stored).not.toContain(secret);
      expect(body.response).toMatchObject({ status: 200, model: 'svc/alpha', usage: { prompt_tokens: 5, completion_tokens: 2 } });

      context.double.script('beta', { kind: 'text', chunks: ['streamed', ' and', ' assembled'] });
      const stream = await chat(context.deployment, logged.key, { model: 'svc/beta', stream: true, messages: [{ role: 'user', content: 'stream it' }] });
      await stream.text();
      const streamed = await eventually(async () => {
        const found = await payloadOf(stream.headers.get('x-request-id')!);
        expect(found.status).toBe(200);
        return found.body;
      });
      expect(streamed.response.text).toBe('streamed and assembled');

      const unlogged = await chat(context.deployment, plain.key, { model: 'svc/alpha', messages: [{ role: 'user', content: 'not logged' }] });
      expect(unlogged.status).toBe(200);
      // The ledger has the request; the request log does not.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const ledger = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${plain.id}`);
      expect(ledger.body.data.map((record: { id: string }) => record.id)).toContain(unlogged.headers.get('x-request-id'));
      expect((await payloadOf(unlogged.headers.get('x-request-id')!)).status).toBe(404);
    }, 30_000);

    it('purges logs beyond the total size bound, oldest first, and all of them past their retention', async () => {
      const key = await createKey(context.deployment, { name: 'bounded key' });
      await adminRequest(context.deployment, 'PUT', `/admin/v1/keys/${key.id}/payload_logging`, { enabled: true });
      const ids: string[] = [];
      for (let index = 0; index < 4; index++) {
        const response = await chat(context.deployment, key.key, { model: 'svc/gamma', messages: [{ role: 'user', content: `${index} ${'x'.repeat(2000)}` }] });
        expect(response.status).toBe(200);
        ids.push(response.headers.get('x-request-id')!);
        // Distinct creation times, so "oldest" is well defined.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // 4 logs of over 2 KiB each exceed the 6 KiB bound: the oldest go, the newest stays.
      await eventually(async () => {
        expect((await payloadOf(ids[0]!)).status).toBe(404);
        expect((await payloadOf(ids[3]!)).status).toBe(200);
      }, 3000);
      // Past the retention of about 4 s, the newest goes too.
      await eventually(async () => expect((await payloadOf(ids[3]!)).status).toBe(404), 8000);
    }, 30_000);
  });
}

describePayloadLogs('embedded');
if (scaledOutAvailable) describePayloadLogs('scaled');
else describe.skip('scaled-out request logs (REDIS_URL / DATABASE_URL not set)', () => it('needs REDIS_URL and DATABASE_URL', () => undefined));
