import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';

// uWebSockets.js is not on npm under its own name. Builds differ in which Node versions and glibc
// they load on, so try each installed build and report which one answered.

export type UwsModule = typeof Uws;

const candidates = ['uWebSockets.js', '@btc-vision/uwebsockets.js'];

export function loadUws(): { uws: UwsModule; build: string } {
  const require = createRequire(import.meta.url);
  const failures: string[] = [];
  for (const name of candidates) {
    try {
      const uws = require(name) as UwsModule;
      const version = (() => {
        try {
          return (require(`${name}/package.json`) as { version?: string }).version ?? 'unknown';
        } catch {
          return 'unknown';
        }
      })();
      return { uws, build: `${name}@${version}` };
    } catch (error) {
      failures.push(`${name}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`No uWebSockets.js build loads on Node ${process.version} (${process.platform}/${process.arch}). Tried: ${failures.join('; ')}`);
}
