import { GatewayError } from '../../shared/errors.js';

// Deeply nested JSON costs nothing to send and a lot to handle: JSON.parse copes, but every
// recursive walk after it (schema validation, serialisation) can overflow the stack. One linear
// pass over the bytes, skipping string contents, finds the nesting depth without recursion.

const quote = 0x22;
const backslash = 0x5c;
const openBrace = 0x7b;
const openBracket = 0x5b;
const closeBrace = 0x7d;
const closeBracket = 0x5d;

/** Throws 400 invalid_json when arrays and objects nest deeper than `maxDepth`. */
export function assertJsonDepth(body: Uint8Array, maxDepth: number): void {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < body.length; index++) {
    const byte = body[index]!;
    if (inString) {
      if (byte === backslash) index++;
      else if (byte === quote) inString = false;
    } else if (byte === quote) {
      inString = true;
    } else if (byte === openBrace || byte === openBracket) {
      if (++depth > maxDepth) {
        throw new GatewayError('invalid_json', `The request body nests arrays and objects deeper than the limit of ${maxDepth} levels.`);
      }
    } else if (byte === closeBrace || byte === closeBracket) {
      depth--;
    }
  }
}
