import { join } from 'node:path';
import type { GatewayConfig } from './config.js';
import type { Counters } from './counters/counters.js';
import { createMemoryCounters } from './counters/memory-counters.js';
import { openPostgresStore } from './store/postgres-store.js';
import { openSqliteStore } from './store/sqlite-store.js';
import type { Store } from './store/store.js';

// Picks the parts behind each interface: PostgreSQL when DATABASE_URL is set, else the embedded
// database file in the data folder.

export async function openStore(config: GatewayConfig, options: { schema?: string } = {}): Promise<Store> {
  if (config.databaseUrl) return openPostgresStore(config.databaseUrl, { schema: options.schema });
  return openSqliteStore(join(config.dataDir, 'switchboard.db'));
}

export function openMemoryCounters(store: Store): Counters {
  return createMemoryCounters({ spendSource: (keyId, since) => store.spentNanosSince(keyId, since) });
}
