import { secretMatches } from '../shared/keys/api-key.js';
import type { KeyRecord, ProjectRecord, Store } from '../shared/store/store.js';
import { storeUnavailable } from '../shared/store/store-unavailable.js';

// Key records by public id, and project records by id. Records are cached so that a request costs
// no store round trip, but the cache is only a shortcut: revocation is enforced by the admission
// counters (memory or Redis), which every ingress consults on every request, and changes made
// through this process's admin API drop the cached record at once. `maxAgeMs` bounds how long a
// change made elsewhere (another ingress) to name, budget or limits may go unseen. Project changes
// travel on the same key-change broadcast as `project:<id>`.

const PROJECT_PREFIX = 'project:';

/** What the key-change broadcast carries for a changed project. */
export function projectChangeId(projectId: string): string {
  return `${PROJECT_PREFIX}${projectId}`;
}

class RecordCache<T> {
  private readonly cache = new Map<string, { record: T; loadedAt: number }>();
  /** Grows with every invalidation, so a read that raced one is not cached (it may predate the change). */
  private generation = 0;

  constructor(private readonly maxAgeMs: number, private readonly load: (id: string) => Promise<T | null>, private readonly what: string) {}

  async lookup(id: string): Promise<T | null> {
    const cached = this.cache.get(id);
    if (cached && Date.now() - cached.loadedAt < this.maxAgeMs) return cached.record;
    const generation = this.generation;
    // An unreachable store is a 503 with retry-after (a record not in the cache cannot be checked).
    const record = await this.load(id).catch((error: unknown) => {
      throw storeUnavailable(error, this.what);
    });
    if (generation !== this.generation) return record;
    if (record) this.cache.set(id, { record, loadedAt: Date.now() });
    else this.cache.delete(id);
    return record;
  }

  invalidate(id?: string): void {
    this.generation += 1;
    if (id === undefined) this.cache.clear();
    else this.cache.delete(id);
  }
}

export class KeyDirectory {
  private readonly keys: RecordCache<KeyRecord>;
  private readonly projects: RecordCache<ProjectRecord>;

  constructor(store: Store, maxAgeMs: number) {
    this.keys = new RecordCache(maxAgeMs, (publicId) => store.getKeyByPublicId(publicId), 'check this API key');
    this.projects = new RecordCache(maxAgeMs, (id) => store.getProject(id), "check this key's project");
  }

  /**
   * The secret last verified against each cached record: the SHA-256 of a presented secret is
   * computed once per cached record, not once per request. A reloaded or invalidated record is a
   * new object, so its memo goes with it (a rotation or revocation through this process).
   */
  private readonly verified = new WeakMap<KeyRecord, string>();

  lookup(publicId: string): Promise<KeyRecord | null> {
    return this.keys.lookup(publicId);
  }

  /** The key's record when `secret` is its secret, else null. */
  async verify(publicId: string, secret: string): Promise<KeyRecord | null> {
    const record = await this.keys.lookup(publicId);
    if (!record) return null;
    if (this.verified.get(record) === secret) return record;
    if (!secretMatches(secret, record.secretHash)) return null;
    this.verified.set(record, secret);
    return record;
  }

  /** The key's project, or null when it has none (or it was deleted). */
  async projectOf(key: KeyRecord): Promise<ProjectRecord | null> {
    return key.projectId === null ? null : this.projects.lookup(key.projectId);
  }

  /** A key's public id, or projectChangeId(id) for a project; everything when undefined. */
  invalidate(publicId?: string): void {
    if (publicId?.startsWith(PROJECT_PREFIX)) {
      // A deleted project detaches its keys in the store: drop cached keys too, so none keeps it.
      this.projects.invalidate(publicId.slice(PROJECT_PREFIX.length));
      this.keys.invalidate();
      return;
    }
    if (publicId === undefined) this.projects.invalidate();
    this.keys.invalidate(publicId);
  }
}
