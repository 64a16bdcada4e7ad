import type { Logger } from 'pino';
import type { Catalog } from '../shared/catalog/catalog-types.js';
import type { QueuedJob } from '../shared/job.js';
import type { PayloadLogSettings } from '../shared/store/payload-log-settings.js';
import type { Store } from '../shared/store/store.js';

// Records a job's request and answer when payload logging is on for its key (the key's own
// setting, else the global default). Runs after the answer has gone out, never on the way to
// the provider. What is stored is redacted: gateway keys, admin tokens and the catalog's provider
// credentials are replaced wherever they appear (a user may paste one into a prompt).

/** How long a key's setting is trusted in this process before it is read again. */
const SETTING_CACHE_MS = 2000;

const gatewaySecrets = /\b(?:sk-service-|sb-admin-)[A-Za-z0-9_\-.]+/g;

export interface PayloadRecorder {
  record(job: QueuedJob, response: unknown): Promise<void>;
}

export function createPayloadRecorder(store: Store, catalog: Catalog, settings: PayloadLogSettings, logger: Logger): PayloadRecorder {
  const cache = new Map<string, { enabled: boolean; at: number }>();
  const providerSecrets = [...catalog.providers.values()].map((provider) => provider.apiKey).filter((key): key is string => typeof key === 'string' && key.length >= 8);

  async function enabledFor(keyId: string): Promise<boolean> {
    const cached = cache.get(keyId);
    if (cached && Date.now() - cached.at < SETTING_CACHE_MS) return cached.enabled;
    const own = await store.payloadLogging(keyId);
    const enabled = own ?? settings.defaultOn;
    if (cache.size > 10_000) cache.clear();
    cache.set(keyId, { enabled, at: Date.now() });
    return enabled;
  }

  function redact(text: string): string {
    let out = text.replace(gatewaySecrets, '[redacted]');
    for (const secret of providerSecrets) out = out.split(secret).join('[redacted]');
    return out;
  }

  function body(value: unknown): string {
    const text = redact(JSON.stringify(value) ?? 'null');
    if (Buffer.byteLength(text) <= settings.maxBodyBytes) return text;
    // Cut bodies stay JSON: the head as a string, and how much there was.
    return JSON.stringify({ truncated: true, bytes: Buffer.byteLength(text), head: text.slice(0, Math.max(0, settings.maxBodyBytes - 200)) });
  }

  return {
    async record(job, response) {
      try {
        if (!(await enabledFor(job.keyId))) return;
        const request = body(job.request);
        const answer = body(response);
        await store.savePayload({ id: job.id, keyId: job.keyId, createdAt: new Date(job.enqueuedAt).toISOString(), request, response: answer, bytes: Buffer.byteLength(request) + Buffer.byteLength(answer) });
      } catch (error) {
        logger.warn({ err: (error as Error).message, jobId: job.id }, 'could not record the request log');
      }
    },
  };
}
