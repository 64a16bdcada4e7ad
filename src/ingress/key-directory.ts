import type { KeyRecord, Store } from '../shared/store/store.js';
import { storeUnavailable } from '../shared/store/store-unavailable.js';

// Key records by public id. Records are cached so that a request costs no store round trip, but
// the cache is only a shortcut: revocation is enforced by the admission counters (memory or
// Redis), which every ingress consults on every request, and changes made through this process's
// admin API drop the cached record at once. `maxAgeMs` bounds how long a change made elsewhere
// (another ingress) to name, budget or limits may go unseen.

export class KeyDirectory {
  private readonly cache = new Map<string, { record: KeyRecord; loadedAt: number }>();
  /** Grows with every invalidation, so a read that raced one is not cached (it may predate the change). */
  private generation = 0;

  constructor(private readonly store: Store, private readonly maxAgeMs: number) {}

  async lookup(publicId: string): Promise<KeyRecord | null> {
    const cached = this.cache.get(publicId);
    if (cached && Date.now() - cached.loadedAt < this.maxAgeMs) return cached.record;
    const generation = this.generation;
    // An unreachable store is a 503 with retry-after (a key not in the cache cannot be checked).
    const record = await this.store.getKeyByPublicId(publicId).catch((error: unknown) => {
      throw storeUnavailable(error, 'check this API key');
    });
    if (generation !== this.generation) return record;
    if (record) this.cache.set(publicId, { record, loadedAt: Date.now() });
    else this.cache.delete(publicId);
    return record;
  }

  invalidate(publicId?: string): void {
    this.generation += 1;
    if (publicId === undefined) this.cache.clear();
    else this.cache.delete(publicId);
  }
}
