import type { HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../shared/errors.js';
import type { InflightBodyBudget } from './pipeline/inflight-body-budget.js';
import { assertJsonDepth } from './pipeline/json-depth.js';

// A request body, collected from the moment the handler is called: uWS drops body chunks that
// arrive before onData is attached, so collection starts at once, while authentication (which
// decides whether the body is wanted at all) may still be waiting for the key store. Every byte
// held counts against the process's in-flight budget until the body is handed over or dropped.

export interface BodyLimits {
  maxBodyBytes: number;
  maxJsonDepth: number;
  budget: InflightBodyBudget;
}

export class PendingBody {
  private chunks: Buffer[] = [];
  private size = 0;
  private failure?: GatewayError;
  private result?: Buffer;
  private waiter?: { resolve: (body: Buffer | undefined) => void; reject: (error: GatewayError) => void };
  /** True once the last chunk arrived (or the body was refused): the connection can take another request. */
  complete = false;
  private dropped = false;
  private aborted = false;

  constructor(res: HttpResponse, private readonly limits: BodyLimits, declaredLength: string) {
    // A declared length over the limit is refused before a byte is read.
    if (declaredLength !== '' && Number(declaredLength) > limits.maxBodyBytes) this.fail(tooLarge(limits.maxBodyBytes));
    res.onData((chunk, isLast) => this.receive(chunk, isLast));
  }

  private receive(chunk: ArrayBuffer, isLast: boolean): void {
    if (isLast) this.complete = true;
    if (this.dropped || this.aborted || this.failure) return;
    const bytes = chunk.byteLength;
    if (this.size + bytes > this.limits.maxBodyBytes) return this.fail(tooLarge(this.limits.maxBodyBytes));
    if (!this.limits.budget.take(bytes)) {
      return this.fail(new GatewayError('overloaded', 'The gateway is holding too many request bodies at once; retry shortly.', { retryAfterSeconds: 1 }));
    }
    this.size += bytes;
    // uWS reuses the chunk's memory after the callback returns.
    this.chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) this.finish();
  }

  private finish(): void {
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    this.release();
    this.result = body;
    this.waiter?.resolve(body);
  }

  private fail(error: GatewayError): void {
    this.failure = error;
    this.release();
    this.waiter?.reject(error);
  }

  private release(): void {
    this.limits.budget.give(this.size);
    this.size = 0;
    this.chunks = [];
  }

  /** The whole body; undefined when the client went away first. */
  read(): Promise<Buffer | undefined> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.result) return Promise.resolve(this.result);
    if (this.aborted || this.dropped) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The body parsed as JSON (depth-checked first); undefined when the client went away first. */
  async json(): Promise<unknown> {
    const body = await this.read();
    return body === undefined ? undefined : parseJsonBody(body, this.limits.maxJsonDepth);
  }

  /** The request is refused: keep nothing of what still arrives. */
  drop(): void {
    this.dropped = true;
    this.release();
  }

  abort(): void {
    this.aborted = true;
    this.release();
    this.waiter?.resolve(undefined);
  }
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('request_too_large', `The request body is larger than the limit of ${limit} bytes.`);
}

export function parseJsonBody(body: Buffer, maxDepth: number): unknown {
  if (body.length === 0) throw new GatewayError('invalid_json', 'The request body is empty; send a JSON object.');
  assertJsonDepth(body, maxDepth);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new GatewayError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`);
  }
}
