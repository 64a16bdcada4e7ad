import type { Logger } from 'pino';
import { positiveNumber } from '../config.js';
import type { Store } from './store.js';

// Settings of the opt-in request logs, read from the environment, and the purge that keeps them
// within their retention (age) and total size whether or not anything is being logged now.

export interface PayloadLogSettings {
  /** SWITCHBOARD_PAYLOAD_LOGGING=on logs every key that has no setting of its own; default off. */
  defaultOn: boolean;
  /** SWITCHBOARD_PAYLOAD_RETENTION_DAYS, default 7 (fractions allowed). */
  retentionMs: number;
  /** SWITCHBOARD_PAYLOAD_MAX_BODY_BYTES: each body is cut to this (default 256 KiB). */
  maxBodyBytes: number;
  /** SWITCHBOARD_PAYLOAD_MAX_TOTAL_MB: the oldest logs go beyond this total (default 512). */
  maxTotalBytes: number;
  /** SWITCHBOARD_PAYLOAD_PURGE_INTERVAL_MS, default one hour. */
  purgeIntervalMs: number;
}

export function readPayloadLogSettings(environment: NodeJS.ProcessEnv): PayloadLogSettings {
  const mode = (environment.SWITCHBOARD_PAYLOAD_LOGGING ?? 'off').toLowerCase();
  if (!['on', 'off', 'true', 'false', '1', '0', ''].includes(mode)) throw new Error(`SWITCHBOARD_PAYLOAD_LOGGING must be on or off, got '${mode}'.`);
  return {
    defaultOn: mode === 'on' || mode === 'true' || mode === '1',
    retentionMs: Math.round(positiveNumber(environment, 'SWITCHBOARD_PAYLOAD_RETENTION_DAYS', 7) * 86_400_000),
    maxBodyBytes: Math.round(positiveNumber(environment, 'SWITCHBOARD_PAYLOAD_MAX_BODY_BYTES', 256 * 1024)),
    maxTotalBytes: Math.round(positiveNumber(environment, 'SWITCHBOARD_PAYLOAD_MAX_TOTAL_MB', 512) * 1024 * 1024),
    purgeIntervalMs: positiveNumber(environment, 'SWITCHBOARD_PAYLOAD_PURGE_INTERVAL_MS', 3_600_000),
  };
}

/** Purges now and then every interval; stop() ends it (before the store closes). */
export function startPayloadPurge(store: Store, settings: PayloadLogSettings, logger: Logger): { stop(): void } {
  const purge = () => {
    store.purgePayloads(new Date(Date.now() - settings.retentionMs).toISOString(), settings.maxTotalBytes)
      .then((removed) => {
        if (removed > 0) logger.info({ removed }, 'request logs purged (retention and size bound)');
      })
      .catch((error: Error) => logger.warn({ err: error.message }, 'could not purge request logs'));
  };
  purge();
  const timer = setInterval(purge, settings.purgeIntervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
