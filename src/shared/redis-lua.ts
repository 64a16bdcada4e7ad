import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

// Lua scripts shipped as files next to the module that runs them, sent once with SCRIPT LOAD and
// run by sha. If Redis forgot them (a restart, SCRIPT FLUSH) or the load lost a race, the call falls
// back to EVAL, which caches the script again.

export interface LuaScript {
  lua: string;
  sha: string;
}

/** Reads a script once, at start; `url` is resolved against the caller's `import.meta.url`. */
export function loadLuaScript(url: URL): LuaScript {
  const lua = readFileSync(url, 'utf8');
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** Ships scripts ahead of their first use, so that it is already an EVALSHA; failures are retried by runLuaScript. */
export function preloadLuaScripts(redis: Redis, scripts: LuaScript[]): void {
  for (const script of scripts) redis.script('LOAD', script.lua).catch(() => undefined);
}

export async function runLuaScript(redis: Redis, script: LuaScript, keys: string[], args: (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
    return redis.eval(script.lua, keys.length, ...keys, ...args);
  }
}
