import http from 'node:http';
import { Pool } from 'undici';

// The "plain Node proxy" baseline: what Node itself costs to forward a chat completion, with none
// of a gateway's work (no auth, no accounting, no routing). node:http in front, an undici Pool
// behind, the JSON request body parsed and re-serialised, a JSON answer parsed and re-serialised,
// and a streamed (SSE) answer piped through as it arrives.
//   node --import tsx bench/node-proxy.ts --port 0 --upstream http://127.0.0.1:PORT

function argument(name: string, fallback?: string): string {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? process.argv[index + 1] : fallback;
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
}

const upstream = new URL(argument('upstream'));
const pool = new Pool(upstream.origin, { connections: 512, pipelining: 1 });
const prefix = upstream.pathname.replace(/\/$/, '');

const server = http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let body: { stream?: boolean };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean };
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
      return;
    }
    const path = prefix + (req.url ?? '/').replace(/^\/v1/, '');
    pool
      .request({ method: 'POST', path, headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' }, body: JSON.stringify(body) })
      .then(async (upstreamResponse) => {
        const type = String(upstreamResponse.headers['content-type'] ?? 'application/json');
        if (body.stream) {
          res.writeHead(upstreamResponse.statusCode, { 'content-type': type, 'cache-control': 'no-cache' });
          for await (const chunk of upstreamResponse.body) res.write(chunk);
          res.end();
          return;
        }
        const answer = await upstreamResponse.body.json();
        res.writeHead(upstreamResponse.statusCode, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end();
      });
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(argument('port', '0')), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
