import type { HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../shared/errors.js';

/**
 * Collects a request body up to `limit` bytes. uWS reuses the chunk's memory after the callback,
 * so each chunk is copied. Resolves undefined when the client aborts first.
 */
export function readBody(res: HttpResponse, limit: number, onAbortedRegistered: { aborted: boolean }): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    res.onData((chunk, isLast) => {
      if (failed) return;
      if (onAbortedRegistered.aborted) return resolve(undefined);
      size += chunk.byteLength;
      if (size > limit) {
        failed = true;
        reject(new GatewayError('request_too_large', `The request body is larger than the limit of ${limit} bytes.`));
        return;
      }
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
  });
}

export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) throw new GatewayError('invalid_json', 'The request body is empty; send a JSON object.');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new GatewayError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`);
  }
}
