// What the start-up banner prints: the address actually bound, and, when that is a wildcard, the
// address to open from this machine (browsers refuse http://0.0.0.0).

const wildcards: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1', '[::]': '::1' };

function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export interface ListenAddress {
  /** http://<bound host>:<port>, as bound. */
  bound: string;
  /** A URL that reaches it from this machine: the loopback address when bound to every interface. */
  local: string;
  /** The banner text: the bound URL, plus the local one when they differ. */
  describe: string;
}

export function listenAddress(host: string, port: number): ListenAddress {
  const bound = `http://${urlHost(host)}:${port}`;
  const loopback = wildcards[host];
  if (!loopback) return { bound, local: bound, describe: bound };
  const local = `http://${urlHost(loopback)}:${port}`;
  return { bound, local, describe: `${bound} (every interface; from this machine ${local})` };
}
