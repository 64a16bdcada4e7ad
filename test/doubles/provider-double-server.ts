// The node:http plumbing shared by the provider doubles: a server on 127.0.0.1 at a free port, the
// per-model script queue, the record of requests and of requests the client abandoned, reset and
// close. Each double supplies only its wire format through ProviderDoubleSetup.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProviderDouble<Behaviour, Recorded, Aborted> {
  /** `http://127.0.0.1:<port>` followed by the setup's base path. */
  url: string;
  script(model: string, ...behaviours: Behaviour[]): void;
  requests: Recorded[];
  /** Requests whose connection the client closed before the answer was complete. */
  aborted: Aborted[];
  /** The most requests that were open at once (answer not yet ended) since start or reset. */
  mostOpen(): number;
  reset(): void;
  close(): Promise<void>;
}

export interface ProviderExchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  /** Set when the connection closed (client gone or we destroyed it): stop writing. */
  closed: AbortController;
  /** The model asked for, as far as known; what an abandoned request is recorded under. */
  model: string;
  /** Set by a double before it cuts the connection itself, so the cut is not taken for a client abort. */
  selfDestroyed: boolean;
}

export interface ProviderDoubleState<Behaviour, Recorded> {
  /** Scripted behaviours are used in order; the last one repeats, and unscripted models get the setup's default. */
  next(model: string): Behaviour;
  scriptedModels(): string[];
  requests: Recorded[];
}

export interface ProviderDoubleSetup<Behaviour, Recorded, Aborted> {
  /** Appended to the origin in `url`, e.g. `/v1`. */
  basePath: string;
  /** What a model without a script does. */
  unscripted: Behaviour;
  handle(exchange: ProviderExchange, state: ProviderDoubleState<Behaviour, Recorded>): Promise<void>;
  abandoned(exchange: ProviderExchange): Aborted;
  /** JSON body of the 500 answered when `handle` throws before any header went out. */
  failureBody(error: unknown): string;
  /** Runs when behaviours are scripted, before any request can use them (e.g. to load fixtures). */
  onScript?(behaviours: Behaviour[]): void;
  onReset?(): void;
  keepAliveTimeout?: number;
}

export async function startProviderDoubleServer<Behaviour, Recorded, Aborted>(
  setup: ProviderDoubleSetup<Behaviour, Recorded, Aborted>,
): Promise<ProviderDouble<Behaviour, Recorded, Aborted>> {
  const queues = new Map<string, { queue: Behaviour[]; last?: Behaviour }>();
  const requests: Recorded[] = [];
  const aborted: Aborted[] = [];
  let closing = false;

  const state: ProviderDoubleState<Behaviour, Recorded> = {
    next(model) {
      const entry = queues.get(model);
      if (!entry) return setup.unscripted;
      if (entry.queue.length > 0) entry.last = entry.queue.shift();
      return entry.last ?? setup.unscripted;
    },
    scriptedModels: () => [...queues.keys()],
    requests,
  };

  let open = 0;
  let mostOpen = 0;
  const server = http.createServer((req, res) => {
    const exchange: ProviderExchange = { req, res, closed: new AbortController(), model: '', selfDestroyed: false };
    open++;
    mostOpen = Math.max(mostOpen, open);
    res.on('close', () => {
      open--;
      exchange.closed.abort();
      // Connections cut by close() are the test's doing, not an abort the gateway caused.
      if (!res.writableEnded && !exchange.selfDestroyed && !closing) aborted.push(setup.abandoned(exchange));
    });
    setup.handle(exchange, state).catch((error: unknown) => {
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(setup.failureBody(error));
      }
    });
  });
  if (setup.keepAliveTimeout !== undefined) server.keepAliveTimeout = setup.keepAliveTimeout;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${setup.basePath}`,
    requests,
    aborted,
    script(model, ...behaviours) {
      setup.onScript?.(behaviours);
      const entry = queues.get(model) ?? { queue: [] };
      entry.queue.push(...behaviours);
      queues.set(model, entry);
    },
    mostOpen: () => mostOpen,
    reset() {
      mostOpen = open;
      queues.clear();
      setup.onReset?.();
      requests.length = 0;
      aborted.length = 0;
    },
    close() {
      closing = true;
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** The request body; `json` is undefined when it is empty or not JSON, `malformed` only in the latter case. */
export async function readJsonBody(req: http.IncomingMessage): Promise<{ raw: string; json: any; malformed: boolean }> {
  const raw = await new Promise<string>((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
  if (raw === '') return { raw, json: undefined, malformed: false };
  try {
    return { raw, json: JSON.parse(raw), malformed: false };
  } catch {
    return { raw, json: undefined, malformed: true };
  }
}

/** Request headers as one string each, repeated ones joined as HTTP joins them. */
export function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  return flat;
}
