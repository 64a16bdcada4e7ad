import { createServer, Socket, type Server } from 'node:net';

// A TCP relay the test can cut and restore, put between gateway processes and a shared service
// (Redis, PostgreSQL) to make that service unreachable for them alone, without touching the
// service others are using. Cut: the listener closes and every relayed connection is destroyed,
// so clients see refused and reset connections, as when the service host is down. Pause: nothing
// is forwarded either way, but connections stay open, as when the service (or the network) hangs.

export class TcpRelay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<[Socket, Socket]>();
  private paused = false;
  port = 0;

  constructor(private readonly targetHost: string, private readonly targetPort: number) {}

  static for(url: string, defaultPort: number): TcpRelay {
    const parsed = new URL(url);
    return new TcpRelay(parsed.hostname, Number(parsed.port || defaultPort));
  }

  /** The service's URL with the relay's port in place of the service's own. */
  url(serviceUrl: string): string {
    const parsed = new URL(serviceUrl);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.toString();
  }

  async up(): Promise<void> {
    if (this.server?.listening) return;
    this.server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => this.sockets.delete(socket));
      }
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      if (!this.paused) this.forward(pair);
      client.on('close', () => {
        upstream.destroy();
        this.pairs.delete(pair);
      });
      upstream.on('close', () => client.destroy());
    });
    // The same port again after a cut, so clients reconnect to where they were.
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Stops forwarding: bytes wait in the relay until resume(). */
  pause(): void {
    this.paused = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  resume(): void {
    this.paused = false;
    for (const pair of this.pairs) this.forward(pair);
  }

  private forward([client, upstream]: [Socket, Socket]): void {
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async down(): Promise<void> {
    const closed = new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}
