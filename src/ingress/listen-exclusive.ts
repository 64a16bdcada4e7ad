import { createServer } from 'node:net';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';

// uWebSockets.js listens with SO_REUSEPORT unless told otherwise, so a second gateway started on a
// taken port would bind it too and the kernel would split connections between the two. The
// exclusive flag makes that bind fail instead, and the start-up stops with a clear message.
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

// The bundled typings lack the (host, port, options, callback) overload the native build has.
type ListenWithOptions = (host: string, port: number, options: number, callback: (socket: us_listen_socket | false) => void) => unknown;

export async function listenExclusive(app: TemplatedApp, host: string, port: number, what: string): Promise<us_listen_socket> {
  const socket = await new Promise<us_listen_socket | false>((resolve) => {
    (app.listen as unknown as ListenWithOptions).call(app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, resolve);
  });
  if (socket) return socket;
  throw new Error(`${what} cannot listen on ${host}:${port}: ${await whyNotListening(host, port)}.`);
}

/** uWS only says no; a plain bind on the same address tells why (in use, not local, not permitted). */
async function whyNotListening(host: string, port: number): Promise<string> {
  const code = await new Promise<string | undefined>((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
  switch (code) {
    case 'EADDRINUSE':
      return 'the port is already in use (is another Switchboard running?). Stop that process or set PORT to a free port';
    case 'EADDRNOTAVAIL':
      return 'the address is not one of this machine\'s. Set HOST to a local address, 127.0.0.1 or 0.0.0.0';
    case 'EACCES':
      return 'permission denied (ports below 1024 need privileges). Set PORT to 1024 or above';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `HOST '${host}' does not resolve`;
    default:
      return code ? `the bind failed with ${code}` : 'the bind failed';
  }
}
