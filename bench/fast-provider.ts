import { loadUws } from '../src/ingress/uws-loader.js';
import { chunkText, completionText } from './protocol.js';

// A fast test double of an OpenAI-format provider for the benchmarks (uWebSockets.js, so that it
// costs as little CPU as possible and the gateways, not the double, are what is measured).
//
// POST /v1/chat/completions (any path ending in /chat/completions). The request's `model` picks the
// behaviour (a leading `svc/` is ignored, so one body serves every target):
//   - any model, stream false: one JSON completion.
//   - `paced-K-P`, stream true: a role chunk, then K content chunks P ms apart (the first at once),
//     a finish chunk, a usage chunk and [DONE]. P = 0: each chunk on the next event-loop turn after
//     the one before (one write each, no timer).
//   - `idle`, stream true: a role chunk and one content chunk, then silence until the client goes
//     away (or `--idle-max-ms`, after which the stream finishes normally).
//   - any other model, stream true: as `paced-<--chunks>-<--pause-ms>`.
//
// Usage: tsx bench/fast-provider.ts [--port N] [--chunks K] [--pause-ms P] [--idle-max-ms M]
// Prints `listening <port>` once ready. Listens on 127.0.0.1 only.

interface ProviderOptions {
  port: number;
  chunks: number;
  pauseMs: number;
  idleMaxMs: number;
}

function parseArgs(argv: string[]): ProviderOptions {
  const options: ProviderOptions = { port: 0, chunks: 20, pauseMs: 5, idleMaxMs: 120_000 };
  for (let i = 0; i < argv.length; i += 1) {
    const [flag, inline] = argv[i]!.split('=', 2) as [string, string | undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--port') options.port = value();
    else if (flag === '--chunks') options.chunks = value();
    else if (flag === '--pause-ms') options.pauseMs = value();
    else if (flag === '--idle-max-ms') options.idleMaxMs = value();
  }
  return options;
}


const { uws } = loadUws();
const options = parseArgs(process.argv.slice(2));
const app = uws.App();
let sequence = 0;

function completionJson(id: string, model: string): string {
  return `{"id":"${id}","object":"chat.completion","created":1735689600,"model":${JSON.stringify(model)},"choices":[{"index":0,"message":{"role":"assistant","content":${JSON.stringify(completionText)},"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19},"system_fingerprint":"fp_bench"}`;
}

function modeOf(model: string): { chunks: number; pauseMs: number; idle: boolean } {
  const name = model.startsWith('svc/') ? model.slice(4) : model;
  if (name.startsWith('idle')) return { chunks: 1, pauseMs: options.idleMaxMs, idle: true };
  const match = /^paced-(\d+)-(\d+)$/.exec(name);
  if (match) return { chunks: Number(match[1]), pauseMs: Number(match[2]), idle: false };
  return { chunks: options.chunks, pauseMs: options.pauseMs, idle: false };
}

app.post('/*', (res, req) => {
  const url = req.getUrl();
  if (!url.endsWith('/chat/completions')) {
    res.cork(() => res.writeStatus('404 Not Found').end('{"error":{"message":"not found"}}'));
    return;
  }
  let aborted = false;
  let timer: NodeJS.Timeout | undefined;
  res.onAborted(() => {
    aborted = true;
    if (timer) clearTimeout(timer);
  });
  let body: Buffer | undefined;
  res.onData((chunk, isLast) => {
    const piece = Buffer.from(chunk.slice(0));
    body = body ? Buffer.concat([body, piece]) : piece;
    if (!isLast) return;
    let parsed: { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } };
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      if (!aborted) res.cork(() => res.writeStatus('400 Bad Request').writeHeader('content-type', 'application/json').end('{"error":{"message":"bad json"}}'));
      return;
    }
    const model = typeof parsed.model === 'string' ? parsed.model : 'unknown';
    const id = `chatcmpl-fast${(sequence += 1)}`;
    if (parsed.stream !== true) {
      const json = completionJson(id, model);
      if (!aborted) res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(json));
      return;
    }
    const mode = modeOf(model);
    const prefix = `data: {"id":"${id}","object":"chat.completion.chunk","created":1735689600,"model":${JSON.stringify(model)},"system_fingerprint":"fp_bench","choices":[`;
    const includeUsage = parsed.stream_options?.include_usage === true;
    const suffix = includeUsage ? '],"usage":null}\n\n' : ']}\n\n';
    let sent = 0;
    const sendNext = () => {
      timer = undefined;
      if (aborted) return;
      res.cork(() => {
        if (sent < mode.chunks) {
          res.write(`${prefix}{"index":0,"delta":{"content":"${chunkText(sent)}"},"logprobs":null,"finish_reason":null}${suffix}`);
          sent += 1;
          if (sent < mode.chunks || mode.idle) {
            // A 0 ms pause means no delay at all: setTimeout would wait at least 1 ms, so the next
            // chunk goes out on the next turn of the event loop, still as a write of its own.
            if (mode.pauseMs === 0 && !mode.idle) setImmediate(sendNext);
            else timer = setTimeout(sendNext, mode.pauseMs);
            return;
          }
        }
        let tail = `${prefix}{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}${suffix}`;
        if (includeUsage) tail += `data: {"id":"${id}","object":"chat.completion.chunk","created":1735689600,"model":${JSON.stringify(model)},"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":${mode.chunks},"total_tokens":${12 + mode.chunks}}}\n\n`;
        res.end(`${tail}data: [DONE]\n\n`);
      });
    };
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('content-type', 'text/event-stream');
      res.writeHeader('cache-control', 'no-cache');
      res.write(`${prefix}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}${suffix}`);
    });
    sendNext();
  });
});

app.any('/*', (res) => {
  res.cork(() => res.writeStatus('404 Not Found').end('{"error":{"message":"not found"}}'));
});

app.listen('127.0.0.1', options.port, (socket) => {
  if (!socket) {
    process.stderr.write(`fast-provider: cannot listen on 127.0.0.1:${options.port}\n`);
    process.exit(1);
  }
  process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
