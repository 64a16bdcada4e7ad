import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// Keys look like sk-service-<public id>-<secret>. The public id finds the record; only a SHA-256
// of the secret is stored (the secret has 190 bits of entropy, so a slow hash adds nothing).

export const keyPrefix = 'sk-service-';
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const keyPattern = /^sk-service-([A-Za-z0-9]{12})-([A-Za-z0-9]{32})$/;

function randomText(length: number): string {
  const bytes = randomBytes(length * 2);
  let text = '';
  // Rejection sampling keeps every character equally likely.
  for (let index = 0; index < bytes.length && text.length < length; index += 1) {
    const byte = bytes[index]!;
    if (byte < 248) text += alphabet[byte % 62];
  }
  return text.length === length ? text : randomText(length);
}

export interface GeneratedKey {
  key: string;
  publicId: string;
  secretHash: string;
  keyHint: string;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function keyHint(publicId: string, secret: string): string {
  return `${keyPrefix}${publicId}-...${secret.slice(-4)}`;
}

export function generateApiKey(): GeneratedKey {
  const publicId = randomText(12);
  const secret = randomText(32);
  return { key: `${keyPrefix}${publicId}-${secret}`, publicId, secretHash: hashSecret(secret), keyHint: keyHint(publicId, secret) };
}

export function parseApiKey(key: string): { publicId: string; secret: string } | undefined {
  const match = keyPattern.exec(key);
  return match ? { publicId: match[1]!, secret: match[2]! } : undefined;
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const given = Buffer.from(hashSecret(secret), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/** Compares an admin token without leaking its length or content through timing. */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
