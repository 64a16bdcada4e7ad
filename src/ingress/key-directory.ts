import { secretMatches } from '../shared/keys/api-key.js';
import type { KeyRecord, Store } from '../shared/store/store.js';
import { storeUnavailable } from '../shared/store/store-unavailable.js';

// Key records by public id. Records are cached so that a request costs no store round trip, but
// the cache is only a shortcut: revocation is enforced by the admission counters (memory or
// Redis), which every ingress consults on every request, and changes made through this process's
// admin API drop the cached record at once. `maxAgeMs` bounds how long a change made elsewhere
// (another ingress) to name, budget or limits may go unseen.

interface CachedKey {
  record: KeyRecord;
  loadedAt: number;
  /**
   * The secret last verified against this record. The SHA-256 of a presented secret is computed
   * once per cached record, not once per request; the memo goes with the record when it is
   * reloaded or invalidated (a rotation or revocation through this process).
   */
  verifiedSecret?: string;
}

export class KeyDirectory {
  private readonly cache = new Map<string, CachedKey>();
  /** Grows with every invalidation, so a read that raced one is not cached (it may predate the change). */
  private generation = 0;

  constructor(private readonly store: Store, private readonly maxAgeMs: number) {}

  /** The key's record when `secret` is its secret, else null. */
  async verify(publicId: string, secret: string): Promise<KeyRecord | null> {
    const cached = this.fresh(publicId);
    if (cached?.verifiedSecret !== undefined && cached.verifiedSecret === secret) return cached.record;
    const record = cached?.record ?? (await this.lookup(publicId));
    if (!record || !secretMatches(secret, record.secretHash)) return null;
    const entry = this.cache.get(publicId);
    if (entry && entry.record === record) entry.verifiedSecret = secret;
    return record;
  }

  private fresh(publicId: string): CachedKey | undefined {
    const cached = this.cache.get(publicId);
    return cached && Date.now() - cached.loadedAt < this.maxAgeMs ? cached : undefined;
  }

  async lookup(publicId: string): Promise<KeyRecord | null> {
    const cached = this.fresh(publicId);
    if (cached) return cached.record;
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
