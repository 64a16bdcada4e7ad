// Which stage of a request each function of the gateway belongs to (issue 12's per-stage cost
// breakdown; bench/stage-breakdown.ts applies it). A sample goes to the stage of the NEAREST frame
// on its stack that a rule matches, so a stage includes the library, Node and native code it calls.
// Rules are tried in order for each frame: more specific first (a function of a file before the
// file). Fallback rules are only used when no ordinary rule matches anywhere on the stack: they
// name shared machinery (a Redis connection's reply parsing, socket reads) whose caller is not on
// the stack because it runs from an I/O callback.

export type ProcessRole = 'embedded' | 'ingress' | 'worker';

export interface StageRule {
  stage: string;
  /** Tested against the frame's URL (file:///…, node:…, '' for native code). */
  file?: RegExp;
  /** Tested against the function name (anonymous ones named from tsx's __name wrapper when possible). */
  fn?: RegExp;
  /** Only in these processes (a library serves different stages in the ingress and the worker). */
  roles?: ProcessRole[];
  /** Only for the sampled frame itself, not for what it calls (a dispatcher such as runMicrotasks). */
  leaf?: true;
  fallback?: true;
}

/** The stages issue 12 names, in request order, then the ones this code adds, then the fallbacks. */
export const issueStages = [
  'HTTP parse',
  'validation',
  'authentication',
  'admission',
  'tokenizer',
  'enqueue',
  'queue hop',
  'provider client',
  'stream decoding',
  'translation',
  'event publish',
  'event delivery',
  'chunk formatting',
  'socket write',
  'ledger',
  'settle',
] as const;

export const extraStages = ['model resolution', 'request pipeline glue', 'worker job orchestration', 'metrics/tracing', 'logging', 'AbortController', 'timers', 'tsx runtime'] as const;

export const fallbackStages = ['Redis client, command not on stack', 'Node socket I/O, owner not on stack', 'async scheduling (microtasks, nextTick)'] as const;

/** What each stage covers, for the legend. */
export const stageScope: Record<string, string> = {
  'HTTP parse': 'uWS route wrapper (request-wrapper), framing checks, body collection and JSON.parse (body-reader, json-depth)',
  validation: 'zod and the surfaces\' request schemas, surface.parse',
  authentication: 'authenticate.ts, key-directory.ts, shared/keys',
  admission: 'admission.ts, output-clamp, project-admission, counters admit and revocation checks (memory or Redis)',
  tokenizer: 'token-counter.ts, gpt-tokenizer',
  enqueue: 'job-registration (job fields, register, enqueue), transport enqueue, the queue producer (BullMQ Queue.add or the lists LPUSH) on the ingress',
  'queue hop': 'embedded: in-process transport run/pump; scaled: the queue consumer (BullMQ Worker, or the lists queue: takes, removals, heartbeat, sweep) and redis-worker-transport process (cancelled/claim check)',
  'provider client': 'provider-client.ts, undici, the upstream body\'s Readable async iterator; embedded: Node socket internals (all its sockets are undici\'s)',
  'stream decoding': 'sse-decoder.ts, stream-relay.ts read loop and delta batching',
  translation: 'surfaces\' *-to-internal, shared/providers adapters (request build, response parse, stream translators), shared/internal',
  'event publish': 'in-process publish, redis-event-batcher, worker control.publish, jobStreamSink publish/commit, first-token claim',
  'event delivery': 'job-router, redis-transport onMessage/deliver, job-watchdog, lost-job-tracker, reply onEvent handlers',
  'chunk formatting': 'chat-render (ChunkFormatter, completionBody), surface renderers, cost headers',
  'socket write': 'sse-writer.ts, http-reply.ts, surface-reply.ts (uWS cork/write/end)',
  ledger: 'sqlite-store/postgres-store recordUsage, better-sqlite3, pg, store-records, usage-plan, ledger-stream, ledgerEntry',
  settle: 'job-settlement, usage-settler, counters settle, pricing, usage',
  'model resolution': 'model-resolution.ts, provider-call-limit, shared/catalog',
  'request pipeline glue': 'request-pipeline handle/countingRefusals, refusal-counts, server.ts',
  'worker job orchestration': 'completion-worker, fallback-chain, runAttempt, deployment picker/health, key-gate, job-dispatch',
  'metrics/tracing': 'shared/observability, request-metering, attempt-tracing, prom-client, OpenTelemetry',
  logging: 'pino and its writers, logger.ts',
  AbortController: 'node:internal/abort_controller and event_target, AttemptSignal',
  timers: 'node timers (setTimeout/clearTimeout/setImmediate processing)',
  'tsx runtime': 'tsx at run time: esbuild\'s keepNames helper __name (run for every closure created) and the loader (source maps for error stacks)',
  'Redis client, command not on stack': 'ioredis/redis-parser work run from a socket read (reply parsing, promise resolution) with no caller to tell which command',
  'Node socket I/O, owner not on stack': 'node:net and stream internals run from a socket read with no library frame above them',
  'async scheduling (microtasks, nextTick)': 'runMicrotasks\' own time, processTicksAndRejections, promise hooks',
};

const src = (path: string) => new RegExp(`/src/${path}`);
const mod = (name: string) => new RegExp(`/node_modules/${name}/`);
const node = (path: string) => new RegExp(`^node:${path}`);

export const stageRules: StageRule[] = [
  // Cross-cutting machinery first: wherever it is called from, it is its own stage.
  { stage: 'async scheduling (microtasks, nextTick)', file: /^$/, fn: /^runMicrotasks$/, leaf: true },
  { stage: 'tsx runtime', file: /\.ts$/, fn: /^__name$/ },
  { stage: 'logging', file: /\/node_modules\/(pino|sonic-boom|thread-stream|pino-std-serializers|fast-redact|@pinojs\/redact|quick-format-unescaped|atomic-sleep|on-exit-leak-free|safe-stable-stringify)\// },
  { stage: 'logging', file: src('shared/logger\\.ts') },
  { stage: 'metrics/tracing', file: src('shared/observability/') },
  { stage: 'metrics/tracing', file: src('ingress/pipeline/request-metering\\.ts') },
  { stage: 'metrics/tracing', file: src('workers/attempt-tracing\\.ts') },
  { stage: 'metrics/tracing', file: /\/node_modules\/(prom-client|@opentelemetry|tdigest|bintrees)\// },
  { stage: 'AbortController', file: node('internal/(abort_controller|event_target)') },
  { stage: 'AbortController', file: src('workers/target-attempt\\.ts'), fn: /^(AttemptSignal|dispose|onParentAbort)$/ },
  { stage: 'timers', file: /^node:(internal\/)?timers/ },
  { stage: 'timers', file: src('workers/target-attempt\\.ts'), fn: /^arm$/ },
  { stage: 'tsx runtime', file: mod('tsx') },
  { stage: 'tokenizer', file: src('shared/(token-counter|input-token-bounds)\\.ts') },
  { stage: 'tokenizer', file: mod('gpt-tokenizer') },

  // Counters: admission, settlement and the ledger stream share files.
  { stage: 'settle', file: src('shared/counters/(memory|redis)-counters\\.ts'), fn: /^(settle|settleSubject)$/ },
  { stage: 'ledger', file: src('shared/counters/(memory|redis)-counters\\.ts'), fn: /^forgetLedgerRecord$/ },
  { stage: 'settle', file: src('shared/counters/release-reservation\\.ts') },
  { stage: 'ledger', file: src('shared/counters/ledger-stream\\.ts') },
  // `run` sends any counters script: the caller on the stack (admit or settle) decides.
  { stage: 'admission', file: src('shared/counters/'), fn: /^(?!run$)/ },
  { stage: 'admission', file: src('ingress/(admission|output-clamp|project-admission)\\.ts') },
  { stage: 'authentication', file: src('ingress/(authenticate|key-directory)\\.ts') },
  { stage: 'authentication', file: src('shared/keys/') },

  { stage: 'HTTP parse', file: src('ingress/pipeline/(request-wrapper|request-framing|json-depth|inflight-body-budget|process-safety)\\.ts') },
  { stage: 'HTTP parse', file: src('ingress/(body-reader|uws-loader)\\.ts') },
  { stage: 'HTTP parse', file: mod('uWebSockets\\.js') },

  { stage: 'validation', file: mod('zod') },
  { stage: 'validation', file: src('ingress/surfaces/.*-schema\\.ts') },
  { stage: 'validation', file: src('ingress/surfaces/.*-surface\\.ts'), fn: /^parse$/ },
  { stage: 'chunk formatting', file: src('ingress/surfaces/.*-(surface|render)\\.ts') },
  { stage: 'chunk formatting', file: src('ingress/pipeline/cost-header\\.ts') },
  { stage: 'socket write', file: src('ingress/(sse-writer|http-reply)\\.ts') },
  { stage: 'socket write', file: src('ingress/pipeline/surface-reply\\.ts') },

  { stage: 'model resolution', file: src('ingress/pipeline/model-resolution\\.ts') },
  { stage: 'model resolution', file: src('shared/providers/provider-call-limit\\.ts') },
  { stage: 'model resolution', file: src('shared/catalog/') },
  { stage: 'stream decoding', file: src('shared/providers/sse-decoder\\.ts') },
  { stage: 'translation', file: src('ingress/surfaces/.*-to-internal\\.ts') },
  { stage: 'translation', file: src('shared/(providers|internal)/') },

  // The job's way out and its events' way back.
  { stage: 'event delivery', file: src('ingress/pipeline/(request-pipeline|job-registration)\\.ts'), fn: /^(onEvent|onGap|open|failStream|fail|complete)$/ },
  { stage: 'enqueue', file: src('ingress/pipeline/job-registration\\.ts') },
  { stage: 'request pipeline glue', file: src('ingress/pipeline/request-pipeline\\.ts') },
  { stage: 'request pipeline glue', file: src('ingress/(refusal-counts|server)\\.ts') },
  { stage: 'request pipeline glue', file: src('embedded-gateway\\.ts') },
  { stage: 'event delivery', file: src('ingress/job-router\\.ts') },
  { stage: 'enqueue', file: src('shared/transport/(job-watchdog|lost-job-tracker)\\.ts'), fn: /^(watch|track)$/ },
  { stage: 'event delivery', file: src('shared/transport/(job-watchdog|lost-job-tracker)\\.ts') },
  { stage: 'enqueue', file: src('shared/transport/in-process-transport\\.ts'), fn: /^(enqueue|waitingCount)$/ },
  { stage: 'event publish', file: src('shared/transport/in-process-transport\\.ts'), fn: /^(publish|claimFirstToken|flush)$/ },
  { stage: 'queue hop', file: src('shared/transport/in-process-transport\\.ts') },
  // V8 reports onMessage, a class-field arrow, unnamed at the class's field initializer (so the
  // __name lookup cannot name it); the file's other unnamed callbacks take no measurable time.
  { stage: 'event delivery', file: src('shared/transport/redis-transport\\.ts'), fn: /^(onMessage|deliver|billIfLost|)$/ },
  { stage: 'enqueue', file: src('shared/transport/redis-transport\\.ts') },
  { stage: 'event publish', file: src('shared/transport/redis-event-batcher\\.ts') },
  { stage: 'event publish', file: src('shared/transport/redis-worker-transport\\.ts'), fn: /^(publish|claimFirstToken|flush|sendHeartbeats|controlFor|onDeliveryProblem)$/ },
  { stage: 'queue hop', file: src('shared/transport/redis-worker-transport\\.ts') },
  { stage: 'event delivery', file: mod('ioredis'), fn: /^(handleSubscriberReply|returnPush)$/, roles: ['ingress'] },
  { stage: 'enqueue', file: mod('bullmq'), roles: ['ingress'] },
  { stage: 'queue hop', file: mod('bullmq'), roles: ['worker', 'embedded'] },
  // The queue under the Redis transport (SWITCHBOARD_QUEUE): producer on the ingress, consumer on the worker.
  { stage: 'enqueue', file: src('shared/transport/(bullmq|list)-job-queue\\.ts'), roles: ['ingress'] },
  { stage: 'queue hop', file: src('shared/transport/(bullmq|list)-job-queue\\.ts'), roles: ['worker', 'embedded'] },

  // The worker's side of a job.
  { stage: 'event publish', file: src('workers/stream-relay\\.ts'), fn: /^(jobStreamSink|publish|commit|started)$/ },
  { stage: 'stream decoding', file: src('workers/stream-relay\\.ts') },
  { stage: 'ledger', file: src('workers/job-settlement\\.ts'), fn: /^ledgerEntry$/ },
  { stage: 'settle', file: src('workers/job-settlement\\.ts') },
  { stage: 'settle', file: src('workers/completion-worker\\.ts'), fn: /^(settle|usageOf|ledgerStatus)$/ },
  { stage: 'settle', file: src('shared/store/usage-settler\\.ts') },
  { stage: 'settle', file: src('shared/(pricing|usage)\\.ts') },
  { stage: 'ledger', file: src('shared/store/') },
  { stage: 'ledger', file: /\/node_modules\/(better-sqlite3|pg|pg-protocol|pg-pool|pg-types|pg-connection-string|postgres-array|postgres-bytea|postgres-date|postgres-interval|pgpass)\// },
  { stage: 'provider client', file: src('workers/(provider-client|provider-call-budget)\\.ts') },
  { stage: 'provider client', file: mod('undici') },
  // Only the stream relay iterates a Readable: the upstream body.
  { stage: 'provider client', file: node('internal/streams/readable'), fn: /^(createAsyncIterator|next)$/ },
  // The embedded process has no other Node sockets than undici's (uWS and SQLite do not use them).
  { stage: 'provider client', file: /^node:(net|stream|internal\/(net|stream_base_commons|streams\/))/, roles: ['embedded'] },
  { stage: 'worker job orchestration', file: src('workers/') },
  { stage: 'worker job orchestration', file: src('shared/transport/transport\\.ts') },

  // Shared machinery, used only when nothing above is on the stack.
  { stage: 'Redis client, command not on stack', file: /\/node_modules\/(ioredis|@ioredis|redis-parser|redis-errors|denque|cluster-key-slot|standard-as-callback)\//, fallback: true },
  { stage: 'Redis client, command not on stack', file: src('shared/transport/redis-connections\\.ts'), fallback: true },
  // Library code run from a microtask with no rule above it (runMicrotasks' own time is the leaf rule's).
  { stage: 'async scheduling (microtasks, nextTick)', file: /^$/, fn: /^runMicrotasks$/, fallback: true },
  { stage: 'async scheduling (microtasks, nextTick)', file: node('internal/(process/task_queues|process/promises|async_hooks)'), fallback: true },
  { stage: 'Node socket I/O, owner not on stack', file: /^node:(net|stream|internal\/(net|stream_base_commons|streams\/|dns))/, fallback: true },
];
