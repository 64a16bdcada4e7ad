import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { expectedStreamText } from './protocol.js';

// The streaming load client of the benchmarks, run as its own process. It speaks HTTP/1.1 over
// raw keep-alive sockets (cheaper than node:http, so that it leaves the CPU to the gateways),
// checks every stream's framing (status 200, text/event-stream, chunked body of `data: <json>`
// events, chat.completion.chunk objects with one id, the content the fast provider sent in
// order, a final `data: [DONE]`) and measures the time to the first content delta.
//
//   --url URL --body-file F [--header 'name: value']... --chunks K
//   --mode closed --concurrency C --duration-ms D     streams back to back on C connections
//   --mode rate --rate R --duration-ms D              R new streams per second (open loop)
//   --mode idle --count N [--hold-ms H]               opens N streams, waits for each one's first
//        content, prints `ready` and holds them until `close` arrives on stdin (or H ms pass)
//   --cycle M                                         `{i}` in the body becomes (stream number mod M)
//
// Prints one JSON line of results on stdout. Every wait is bounded.

interface Options {
  url: URL;
  body: Buffer;
  headers: string[];
  chunks: number;
  mode: 'closed' | 'rate' | 'idle';
  concurrency: number;
  rate: number;
  durationMs: number;
  count: number;
  holdMs: number;
  drainMs: number;
  maxInFlight: number;
  cycle: number;
}

function parseArgs(argv: string[]): Options {
  const raw: Record<string, string[]> = {};
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) continue;
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const value = eq === -1 ? argv[++i]! : arg.slice(eq + 1);
    (raw[name] ??= []).push(value);
  }
  const one = (name: string, fallback?: string) => raw[name]?.[0] ?? fallback;
  const bodyFile = one('body-file');
  if (!one('url') || !bodyFile) throw new Error('--url and --body-file are required');
  return {
    url: new URL(one('url')!),
    body: readFileSync(bodyFile),
    headers: raw.header ?? [],
    chunks: Number(one('chunks', '20')),
    mode: one('mode', 'closed') as Options['mode'],
    concurrency: Number(one('concurrency', '32')),
    rate: Number(one('rate', '100')),
    durationMs: Number(one('duration-ms', '5000')),
    count: Number(one('count', '1000')),
    holdMs: Number(one('hold-ms', '60000')),
    drainMs: Number(one('drain-ms', '15000')),
    maxInFlight: Number(one('max-inflight', '5000')),
    cycle: Number(one('cycle', '1')),
  };
}

const options = parseArgs(process.argv.slice(2));
const expectedText = expectedStreamText(options.chunks);
function buildRequest(body: Buffer): Buffer {
  const head = `POST ${options.url.pathname} HTTP/1.1\r\nhost: ${options.url.host}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: ${body.length}\r\n${options.headers.map((line) => `${line}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}
const bodyTemplate = options.body.toString('utf8');
const fixedRequest = buildRequest(options.body);
/** `{i}` in the body becomes the stream's number modulo --cycle (to spread streams over models). */
function requestFor(sequence: number): Buffer {
  if (!bodyTemplate.includes('{i}')) return fixedRequest;
  return buildRequest(Buffer.from(bodyTemplate.replaceAll('{i}', String(sequence % options.cycle))));
}
let streamSequence = 0;

interface StreamResult {
  ok: boolean;
  error?: string;
  ttfcMs?: number;
  totalMs?: number;
}

/** One keep-alive connection running one stream at a time. */
class Connection {
  readonly socket: Socket;
  closed = false;
  private current?: ActiveStream;
  private connected: Promise<void>;

  constructor() {
    this.socket = connect({ host: options.url.hostname, port: Number(options.url.port), noDelay: true });
    this.connected = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('data', (data: Buffer) => this.current?.push(data));
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      this.current?.fail('connection closed before the stream ended');
    });
  }

  async run(onFirstContent?: () => void): Promise<StreamResult> {
    try {
      await this.connected;
    } catch (error) {
      this.destroy();
      return { ok: false, error: `connect: ${(error as Error).message}` };
    }
    if (this.closed) return { ok: false, error: 'connection closed' };
    return new Promise<StreamResult>((resolve) => {
      this.current = new ActiveStream((result, keepAlive) => {
        this.current = undefined;
        if (!keepAlive) this.destroy();
        resolve(result);
      }, onFirstContent);
      this.socket.write(requestFor(streamSequence++));
    });
  }

  destroy(): void {
    this.closed = true;
    this.socket.destroy();
  }
}

const enum Phase {
  Head,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailer,
  Fixed,
  Done,
}

/** Parses one HTTP response carrying an SSE body and checks its framing. */
class ActiveStream {
  private readonly startedAt = performance.now();
  private firstContentAt?: number;
  private phase = Phase.Head;
  private head = '';
  private pending: Buffer | undefined;
  private chunkLeft = 0;
  private fixedLeft = 0;
  private status = 0;
  private keepAlive = true;
  private text = '';
  private readonly decoder = new TextDecoder();
  private content = '';
  private id: string | undefined;
  private sawDone = false;
  private finished = false;
  private errorBody = '';

  constructor(private readonly done: (result: StreamResult, keepAlive: boolean) => void, private readonly onFirstContent?: () => void) {}

  fail(message: string): void {
    if (this.finished) return;
    this.finished = true;
    this.done({ ok: false, error: message }, false);
  }

  push(data: Buffer): void {
    if (this.finished) return;
    const buffer = this.pending ? Buffer.concat([this.pending, data]) : data;
    this.pending = undefined;
    let offset = 0;
    while (offset < buffer.length && !this.finished) {
      switch (this.phase) {
        case Phase.Head: {
          const end = buffer.indexOf('\r\n\r\n', offset, 'latin1');
          if (end === -1) {
            this.pending = buffer.subarray(offset);
            return;
          }
          this.head = buffer.toString('latin1', offset, end);
          offset = end + 4;
          if (!this.parseHead()) return;
          break;
        }
        case Phase.ChunkSize: {
          const end = buffer.indexOf('\r\n', offset, 'latin1');
          if (end === -1) {
            this.pending = buffer.subarray(offset);
            return;
          }
          const size = parseInt(buffer.toString('latin1', offset, end), 16);
          offset = end + 2;
          if (Number.isNaN(size)) return this.fail('bad chunk size');
          if (size === 0) this.phase = Phase.Trailer;
          else {
            this.chunkLeft = size;
            this.phase = Phase.ChunkData;
          }
          break;
        }
        case Phase.ChunkData: {
          const take = Math.min(this.chunkLeft, buffer.length - offset);
          this.body(buffer.subarray(offset, offset + take));
          offset += take;
          this.chunkLeft -= take;
          if (this.chunkLeft === 0) this.phase = Phase.ChunkDataEnd;
          break;
        }
        case Phase.ChunkDataEnd: {
          if (buffer.length - offset < 2) {
            this.pending = buffer.subarray(offset);
            return;
          }
          if (buffer[offset] !== 13 || buffer[offset + 1] !== 10) return this.fail('chunk not followed by CRLF');
          offset += 2;
          this.phase = Phase.ChunkSize;
          break;
        }
        case Phase.Trailer: {
          const end = buffer.indexOf('\r\n', offset, 'latin1');
          if (end === -1) {
            this.pending = buffer.subarray(offset);
            return;
          }
          const line = buffer.toString('latin1', offset, end);
          offset = end + 2;
          if (line === '') return this.complete();
          break;
        }
        case Phase.Fixed: {
          const take = Math.min(this.fixedLeft, buffer.length - offset);
          this.body(buffer.subarray(offset, offset + take));
          offset += take;
          this.fixedLeft -= take;
          if (this.fixedLeft === 0) return this.complete();
          break;
        }
        default:
          return;
      }
    }
  }

  private parseHead(): boolean {
    const lines = this.head.split('\r\n');
    const statusMatch = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    this.status = statusMatch ? Number(statusMatch[1]) : 0;
    let chunked = false;
    let length = -1;
    let contentType = '';
    for (let i = 1; i < lines.length; i += 1) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'transfer-encoding' && value.toLowerCase().includes('chunked')) chunked = true;
      else if (name === 'content-length') length = Number(value);
      else if (name === 'content-type') contentType = value;
      else if (name === 'connection' && value.toLowerCase() === 'close') this.keepAlive = false;
    }
    if (this.status === 200 && !contentType.startsWith('text/event-stream')) {
      this.fail(`content-type ${contentType || '(none)'}`);
      return false;
    }
    if (chunked) this.phase = Phase.ChunkSize;
    else if (length >= 0) {
      this.fixedLeft = length;
      this.phase = Phase.Fixed;
      if (length === 0) {
        this.complete();
        return false;
      }
    } else {
      this.fail('response without chunked encoding or content-length');
      return false;
    }
    return true;
  }

  private body(bytes: Buffer): void {
    if (this.status !== 200) {
      if (this.errorBody.length < 300) this.errorBody += bytes.toString('utf8');
      return;
    }
    this.text += this.decoder.decode(bytes, { stream: true });
    let start = 0;
    for (;;) {
      const end = this.text.indexOf('\n\n', start);
      if (end === -1) break;
      this.frame(this.text.slice(start, end));
      start = end + 2;
      if (this.finished) return;
    }
    this.text = start === 0 ? this.text : this.text.slice(start);
  }

  private frame(frame: string): void {
    if (frame.startsWith(':')) return; // comment / keep-alive
    if (!frame.startsWith('data: ')) return this.fail(`frame without data: ${JSON.stringify(frame.slice(0, 60))}`);
    const data = frame.slice(6);
    if (this.sawDone) return this.fail('data after [DONE]');
    if (data === '[DONE]') {
      this.sawDone = true;
      return;
    }
    let chunk: { id?: string; object?: string; choices?: Array<{ delta?: { content?: string | null } }>; error?: { code?: unknown; message?: unknown } };
    try {
      chunk = JSON.parse(data);
    } catch {
      return this.fail('event is not JSON');
    }
    if (chunk.error) return this.fail(`error event: ${String(chunk.error.code)}: ${String(chunk.error.message).slice(0, 200)}`);
    if (chunk.object !== 'chat.completion.chunk') return this.fail(`object ${String(chunk.object)}`);
    if (this.id === undefined) this.id = chunk.id;
    else if (chunk.id !== this.id) return this.fail('chunk ids differ within one stream');
    for (const choice of chunk.choices ?? []) {
      const piece = choice.delta?.content;
      if (typeof piece === 'string' && piece.length > 0) {
        if (this.firstContentAt === undefined) {
          this.firstContentAt = performance.now();
          this.onFirstContent?.();
        }
        this.content += piece;
      }
    }
  }

  private complete(): void {
    if (this.finished) return;
    this.phase = Phase.Done;
    if (this.status !== 200) return this.fail(`status ${this.status}: ${this.errorBody.slice(0, 200)}`);
    if (this.text.trim() !== '') return this.fail('body ended inside an event');
    if (!this.sawDone) return this.fail('no [DONE]');
    if (options.mode !== 'idle' && this.content !== expectedText) return this.fail(`content differs: ${JSON.stringify(this.content.slice(0, 80))}`);
    this.finished = true;
    const now = performance.now();
    this.done({ ok: true, ttfcMs: (this.firstContentAt ?? now) - this.startedAt, totalMs: now - this.startedAt }, this.keepAlive);
  }
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round(sorted[index]! * 1000) / 1000;
}

function summary(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null;
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: percentile(sorted, 100), mean: mean === null ? null : Math.round(mean * 1000) / 1000 };
}

class Recorder {
  completed = 0;
  errors = 0;
  readonly errorSamples = new Map<string, number>();
  readonly ttfc: number[] = [];
  readonly total: number[] = [];

  add(result: StreamResult): void {
    if (result.ok) {
      this.completed += 1;
      this.ttfc.push(result.ttfcMs!);
      this.total.push(result.totalMs!);
    } else {
      this.errors += 1;
      const key = (result.error ?? 'unknown').slice(0, 160);
      this.errorSamples.set(key, (this.errorSamples.get(key) ?? 0) + 1);
    }
  }

  report(extra: Record<string, unknown>) {
    return {
      completed: this.completed,
      errors: this.errors,
      errorSamples: Object.fromEntries([...this.errorSamples].slice(0, 5)),
      ttfcMs: summary(this.ttfc),
      totalMs: summary(this.total),
      ...extra,
    };
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function runClosed(): Promise<void> {
  const recorder = new Recorder();
  const startedAt = performance.now();
  const endAt = startedAt + options.durationMs;
  const hardEnd = endAt + options.drainMs;
  const connections: Connection[] = [];
  const worker = async () => {
    let connection = new Connection();
    connections.push(connection);
    while (performance.now() < endAt) {
      if (connection.closed) {
        connection = new Connection();
        connections.push(connection);
      }
      const result = await Promise.race([connection.run(), sleep(Math.max(1, hardEnd - performance.now())).then((): StreamResult => ({ ok: false, error: 'timed out' }))]);
      recorder.add(result);
      if (!result.ok) connection.destroy();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const elapsedMs = performance.now() - startedAt;
  for (const connection of connections) connection.destroy();
  print(recorder.report({ mode: 'closed', concurrency: options.concurrency, elapsedMs: Math.round(elapsedMs), streamsPerSecond: Math.round((recorder.completed / elapsedMs) * 1000 * 10) / 10 }));
}

async function runRate(): Promise<void> {
  const recorder = new Recorder();
  const idle: Connection[] = [];
  const all = new Set<Connection>();
  let started = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let skipped = 0;
  let lateStarts = 0;
  const startedAt = performance.now();
  const endAt = startedAt + options.durationMs;
  const interval = 1000 / options.rate;
  const launch = () => {
    let connection = idle.pop();
    while (connection && connection.closed) connection = idle.pop();
    if (!connection) {
      connection = new Connection();
      all.add(connection);
    }
    const used = connection;
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    used.run().then((result) => {
      inFlight -= 1;
      recorder.add(result);
      if (result.ok && !used.closed) idle.push(used);
      else {
        used.destroy();
        all.delete(used);
      }
    });
  };
  while (performance.now() < endAt) {
    const due = Math.floor((performance.now() - startedAt) / interval) + 1;
    if (due - started > 2) lateStarts += due - started - 1;
    while (started < due) {
      started += 1;
      if (inFlight >= options.maxInFlight) skipped += 1;
      else launch();
    }
    const next = startedAt + started * interval;
    await sleep(Math.max(0, next - performance.now()));
  }
  const sentUntil = performance.now();
  const hardEnd = sentUntil + options.drainMs;
  while (inFlight > 0 && performance.now() < hardEnd) await sleep(5);
  const timedOut = inFlight;
  for (const connection of all) connection.destroy();
  const elapsedMs = sentUntil - startedAt;
  print(
    recorder.report({
      mode: 'rate',
      targetRate: options.rate,
      started,
      skippedAtInFlightCap: skipped,
      lateStarts,
      timedOut,
      maxInFlight,
      elapsedMs: Math.round(elapsedMs),
      streamsPerSecond: Math.round((recorder.completed / elapsedMs) * 1000 * 10) / 10,
    }),
  );
}

async function runIdle(): Promise<void> {
  const connections: Connection[] = [];
  let firstContent = 0;
  let failed = 0;
  const failures = new Map<string, number>();
  const startedAt = performance.now();
  const deadline = startedAt + options.drainMs + options.count * 2;
  const openBatch = 100;
  let opened = 0;
  while (opened < options.count && performance.now() < deadline) {
    // Keep at most `openBatch` streams waiting for their first content at once.
    while (opened - firstContent - failed >= openBatch && performance.now() < deadline) await sleep(2);
    const connection = new Connection();
    connections.push(connection);
    opened += 1;
    let counted = false;
    connection.run(() => {
      counted = true;
      firstContent += 1;
    }).then((result) => {
      if (!counted) {
        failed += 1;
        const key = (result.error ?? 'ended early').slice(0, 160);
        failures.set(key, (failures.get(key) ?? 0) + 1);
      }
    });
  }
  while (firstContent + failed < opened && performance.now() < deadline) await sleep(5);
  const openMs = performance.now() - startedAt;
  process.stdout.write(`ready ${firstContent}\n`);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, options.holdMs);
    const lines = createInterface({ input: process.stdin });
    lines.on('line', (line) => {
      if (line.trim() === 'close') {
        clearTimeout(timer);
        lines.close();
        resolve();
      }
    });
    lines.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  const stillOpen = connections.filter((connection) => !connection.closed).length;
  for (const connection of connections) connection.destroy();
  print({ mode: 'idle', requested: options.count, opened, withFirstContent: firstContent, failed, failures: Object.fromEntries([...failures].slice(0, 5)), stillOpenAtClose: stillOpen, openMs: Math.round(openMs) });
}

function print(result: unknown): void {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

const run = options.mode === 'closed' ? runClosed : options.mode === 'rate' ? runRate : runIdle;
run().then(
  () => process.exit(0),
  (error: Error) => {
    process.stderr.write(`stream-client: ${error.stack ?? error.message}\n`);
    process.exit(1);
  },
);
