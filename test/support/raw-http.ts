import { connect, type Socket } from 'node:net';

// HTTP/1.1 over a bare TCP socket, for what fetch cannot send: malformed request lines, duplicate
// headers, bodies that do not match their Content-Length, uploads that stop half-way.

export interface RawResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

export interface ParsedStream {
  responses: RawResponse[];
  /** Bytes after the last complete response that do not form one (a framing bug when non-empty). */
  leftover: Buffer;
}

export function header(response: RawResponse, name: string): string | undefined {
  return response.headers.find(([key]) => key === name)?.[1];
}

/** Splits bytes a server sent into responses. `headRequests` marks which responses carry no body. */
export function parseResponses(data: Buffer, bodiless: (index: number) => boolean = () => false): ParsedStream {
  const responses: RawResponse[] = [];
  let offset = 0;
  while (offset < data.length) {
    const end = data.indexOf('\r\n\r\n', offset);
    if (end < 0) break;
    const lines = data.subarray(offset, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.1 (\d{3})(?: .*)?$/.exec(lines[0]!);
    if (!match) break;
    const headers = lines.slice(1).map((line): [string, string] => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    });
    const status = Number(match[1]);
    let cursor = end + 4;
    let body: Buffer;
    const length = headers.find(([key]) => key === 'content-length')?.[1];
    const chunked = headers.some(([key, value]) => key === 'transfer-encoding' && /chunked/i.test(value));
    if (bodiless(responses.length) || status === 204 || status === 304) {
      body = Buffer.alloc(0);
    } else if (length !== undefined) {
      if (cursor + Number(length) > data.length) break;
      body = data.subarray(cursor, cursor + Number(length));
      cursor += Number(length);
    } else if (chunked) {
      const parts: Buffer[] = [];
      let complete = false;
      for (;;) {
        const lineEnd = data.indexOf('\r\n', cursor);
        if (lineEnd < 0) break;
        const size = parseInt(data.subarray(cursor, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size) || lineEnd + 2 + size + 2 > data.length) break;
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        cursor = lineEnd + 2 + size + 2;
        if (size === 0) {
          complete = true;
          break;
        }
      }
      if (!complete) break;
      body = Buffer.concat(parts);
    } else {
      body = Buffer.alloc(0);
    }
    responses.push({ status, headers, body });
    offset = cursor;
  }
  return { responses, leftover: data.subarray(offset) };
}

export interface RawConnection {
  socket: Socket;
  /** Everything received so far. */
  received(): Buffer;
  closed: Promise<void>;
  isClosed(): boolean;
  /** Resolves once `predicate` holds for the bytes received, or rejects after `timeoutMs`. */
  waitFor(predicate: (data: Buffer) => boolean, timeoutMs: number): Promise<Buffer>;
  write(data: string | Buffer): Promise<boolean>;
  destroy(): void;
}

export function openRaw(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let closedFlag = false;
    const listeners = new Set<() => void>();
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      for (const listener of listeners) listener();
    });
    socket.on('error', () => undefined);
    const closed = new Promise<void>((done) =>
      socket.once('close', () => {
        closedFlag = true;
        for (const listener of listeners) listener();
        done();
      }),
    );
    const received = () => Buffer.concat(chunks);
    socket.once('connect', () =>
      resolve({
        socket,
        received,
        closed,
        isClosed: () => closedFlag,
        waitFor(predicate, timeoutMs) {
          return new Promise((done, fail) => {
            const check = () => {
              const data = received();
              if (predicate(data)) {
                cleanup();
                done(data);
              } else if (closedFlag) {
                cleanup();
                fail(new Error(`connection closed; received: ${data.toString('latin1').slice(0, 300)}`));
              }
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`timed out after ${timeoutMs} ms; received: ${received().toString('latin1').slice(0, 300)}`));
            }, timeoutMs);
            const cleanup = () => {
              clearTimeout(timer);
              listeners.delete(check);
            };
            listeners.add(check);
            check();
          });
        },
        write(data) {
          return new Promise((done) => {
            if (closedFlag || socket.destroyed) return done(false);
            socket.write(data, (error) => done(!error));
          });
        },
        destroy: () => socket.destroy(),
      }),
    );
    socket.once('error', reject);
  });
}

/** Sends `payload`, then collects what comes back until the server closes or `settleMs` of silence. */
export async function exchange(url: string, payload: string | Buffer, settleMs = 300, capMs = 5000): Promise<{ data: Buffer; closed: boolean }> {
  const connection = await openRaw(url);
  await connection.write(payload);
  const started = Date.now();
  let lastLength = -1;
  let lastChange = Date.now();
  while (!connection.isClosed() && Date.now() - started < capMs) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const length = connection.received().length;
    if (length !== lastLength) {
      lastLength = length;
      lastChange = Date.now();
    } else if (length > 0 && Date.now() - lastChange >= settleMs) {
      break;
    }
  }
  const closed = connection.isClosed();
  connection.destroy();
  return { data: connection.received(), closed };
}

/** Sends `payload` and resolves with the first complete response (the connection is then dropped). */
export async function firstAnswer(url: string, payload: string | Buffer, timeoutMs = 5000): Promise<RawResponse> {
  const connection = await openRaw(url);
  try {
    await connection.write(payload);
    const data = await connection.waitFor((received) => parseResponses(received).responses.length > 0, timeoutMs);
    return parseResponses(data).responses[0]!;
  } finally {
    connection.destroy();
  }
}
