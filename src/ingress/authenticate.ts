import { invalidApiKey } from '../shared/errors.js';
import { parseApiKey } from '../shared/keys/api-key.js';
import type { KeyRecord } from '../shared/store/store.js';
import type { KeyDirectory } from './key-directory.js';

/** Every failure (no header, wrong scheme, unknown, wrong secret, revoked, expired) answers the same 401. */
export async function authenticate(keys: KeyDirectory, authorization: string): Promise<KeyRecord> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  const parsed = match ? parseApiKey(match[1]!) : undefined;
  if (!parsed) throw invalidApiKey();
  const record = await keys.verify(parsed.publicId, parsed.secret);
  if (!record || record.revokedAt !== null || keyExpired(record)) throw invalidApiKey();
  return record;
}

export function keyExpired(record: Pick<KeyRecord, 'expiresAt'>, now = Date.now()): boolean {
  return record.expiresAt !== null && Date.parse(record.expiresAt) <= now;
}
