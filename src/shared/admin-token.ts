import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// Where the admin token lives and what makes it acceptable. The server and the CLI both read it
// through findAdminToken(), so they can never disagree about which token is in force.

export const minimumAdminTokenLength = 24;
/** Distinct characters a token needs: rejects "aaaa…" and short repeated words padded to length. */
export const minimumDistinctCharacters = 10;

export interface FoundAdminToken {
  token: string;
  /** Where it came from, for messages (never the token itself). */
  source: 'SWITCHBOARD_ADMIN_TOKEN' | 'file';
  /** The admin-token file, when that is the source. */
  path?: string;
}

/** The data folder the gateway uses: SWITCHBOARD_DATA_DIR (an empty value counts as unset), else ./data. */
export function dataDirectory(environment: NodeJS.ProcessEnv): string {
  return resolve(environment.SWITCHBOARD_DATA_DIR || './data');
}

export function adminTokenPath(dataDir: string): string {
  return join(dataDir, 'admin-token');
}

/**
 * SWITCHBOARD_ADMIN_TOKEN when set and not blank, else the first line of the data folder's
 * admin-token file; surrounding whitespace is dropped from both. Undefined when neither exists.
 */
export function findAdminToken(environment: NodeJS.ProcessEnv, dataDir = dataDirectory(environment)): FoundAdminToken | undefined {
  const fromEnvironment = environment.SWITCHBOARD_ADMIN_TOKEN?.trim();
  if (fromEnvironment) return { token: fromEnvironment, source: 'SWITCHBOARD_ADMIN_TOKEN' };
  const path = adminTokenPath(dataDir);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`Cannot read the admin token file ${path}: ${(error as Error).message}`);
  }
  return { token: text.trim(), source: 'file', path };
}

/** Why a token is refused, or undefined when it is acceptable. Never quotes the token. */
export function adminTokenWeakness(token: string): string | undefined {
  if (/\s/.test(token)) return 'it contains whitespace, which an Authorization header cannot carry';
  if (token.length < minimumAdminTokenLength) return `it has ${token.length} characters; at least ${minimumAdminTokenLength} are needed`;
  const distinct = new Set(token).size;
  if (distinct < minimumDistinctCharacters) return `it uses only ${distinct} different characters; at least ${minimumDistinctCharacters} are needed`;
  return undefined;
}

/** Throws a start-up error naming the token's source and how to make a good one. */
export function assertStrongAdminToken(found: FoundAdminToken): void {
  const weakness = adminTokenWeakness(found.token);
  if (!weakness) return;
  const where = found.source === 'file' ? `The admin token in ${found.path}` : 'SWITCHBOARD_ADMIN_TOKEN';
  throw new Error(
    `${where} is too weak: ${weakness}. Use a random value, e.g. \`openssl rand -base64 32\`` +
      (found.source === 'file' ? ', or delete the file to have one generated.' : ', or unset it to have one generated in the data folder.'),
  );
}
