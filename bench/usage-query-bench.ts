import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startEmbeddedGateway, type EmbeddedGateway } from '../src/embedded-gateway.js';
import { openPostgresStore } from '../src/shared/store/postgres-store.js';
import { openSqliteStore } from '../src/shared/store/sqlite-store.js';
import type { Store, UsageFilter, UsageRow } from '../src/shared/store/store.js';

// `npm run bench:usage [-- --rows 1000000 --iterations 15 --store sqlite|postgres|both]`
//
// The usage API over a large ledger. Generates a ledger (default 1,000,000 rows over 90 days, 100
// keys with skewed traffic, 12 models, 2% failed requests with no served model), loads it in bulk,
// builds the daily rollup from it with the store's own rebuildUsageRollups(), then times
//   - GET /admin/v1/usage through a running gateway (the embedded gateway in this process, over
//     HTTP, pointed at the generated database),
//   - Store.queryUsage() directly,
//   - the same question asked of the raw ledger with its indexes (what queryUsage did before the
//     rollup existed), for comparison,
// and checks that every answer of the API equals the raw-ledger answer exactly. It also times the
// write path (Store.recordUsage, ledger row + key spend + rollup upsert in one transaction).
// PostgreSQL runs when DATABASE_URL is set, in a throw-away schema; SQLite in a temporary folder.
// Prints a Markdown report (the figures in BENCHMARKS.md come from it).

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    iterations: { type: 'string', default: '15' },
    store: { type: 'string', default: process.env.DATABASE_URL ? 'both' : 'sqlite' },
    days: { type: 'string', default: '90' },
  },
});
const ROWS = Number(args.rows);
const ITERATIONS = Number(args.iterations);
const DAYS = Number(args.days);
const KEYS = 100;
const MODELS = Array.from({ length: 12 }, (_, i) => `svc/model-${String(i).padStart(2, '0')}`);
const PRICES = MODELS.map((_, i) => [0.1 + i * 0.7, 0.4 + i * 2.1] as const); // USD per million tokens
const END = Date.UTC(2026, 9, 1); // the ledger ends at 2026-10-01T00:00Z
const START = END - DAYS * 86_400_000;
const ADMIN_TOKEN = 'bench-admin-token-usage-query-2026';

/** Deterministic PRNG (mulberry32), so every run generates the same ledger. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Columns {
  id: string[];
  keyId: string[];
  requested: string[];
  served: (string | null)[];
  prompt: number[];
  completion: number[];
  cost: number[];
  status: number[];
  latency: number[];
  estimated: boolean[];
  stream: boolean[];
  createdAt: string[];
}

const keyId = (i: number) => `key_bench_${String(i).padStart(3, '0')}`;

/** Generates rows [from, to) of the ledger, column by column. */
function generate(from: number, to: number): Columns {
  const random = prng(from + 1);
  const c: Columns = { id: [], keyId: [], requested: [], served: [], prompt: [], completion: [], cost: [], status: [], latency: [], estimated: [], stream: [], createdAt: [] };
  for (let i = from; i < to; i++) {
    // Skewed traffic: a few keys and models carry most requests, as in real deployments.
    const key = Math.floor(KEYS * random() ** 2);
    const model = Math.floor(MODELS.length * random() ** 1.5);
    const failed = random() < 0.02;
    const prompt = failed ? 0 : 20 + Math.floor(random() * 4000);
    const completion = failed ? 0 : Math.floor(random() * 1500);
    const [p, q] = PRICES[model]!;
    c.id.push(`bench_${String(i).padStart(8, '0')}`);
    c.keyId.push(keyId(key));
    c.requested.push(MODELS[model]!);
    c.served.push(failed ? null : MODELS[model]!);
    c.prompt.push(prompt);
    c.completion.push(completion);
    c.cost.push(Math.round(prompt * p * 1000 + completion * q * 1000));
    c.status.push(failed ? 502 : 200);
    c.latency.push(50 + Math.floor(random() * 3000));
    c.estimated.push(random() < 0.01);
    c.stream.push(random() < 0.6);
    c.createdAt.push(new Date(START + Math.floor(random() * (END - START))).toISOString());
  }
  return c;
}

const ATTEMPTS = '[{"model":"svc/model","provider":"bench","outcome":"success","latencyMs":100}]';
const BATCH = 20_000;

async function loadSqlite(file: string): Promise<void> {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const insert = db.prepare(
    `INSERT INTO usage_ledger (id, key_id, requested_model, served_model, attempts, prompt_tokens, completion_tokens, cost_nanos, status, latency_ms, estimated, stream, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertBatch = db.transaction((c: Columns) => {
    for (let i = 0; i < c.id.length; i++) {
      insert.run(c.id[i], c.keyId[i], c.requested[i], c.served[i], ATTEMPTS, c.prompt[i], c.completion[i], c.cost[i], c.status[i], c.latency[i], c.estimated[i] ? 1 : 0, c.stream[i] ? 1 : 0, c.createdAt[i]);
    }
  });
  for (let from = 0; from < ROWS; from += BATCH) insertBatch(generate(from, Math.min(ROWS, from + BATCH)));
  db.exec('ANALYZE');
  db.close();
}

async function loadPostgres(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    for (let from = 0; from < ROWS; from += BATCH) {
      const c = generate(from, Math.min(ROWS, from + BATCH));
      await client.query(
        `INSERT INTO usage_ledger (id, key_id, requested_model, served_model, attempts, prompt_tokens, completion_tokens, cost_nanos, status, latency_ms, estimated, stream, created_at)
         SELECT id, key_id, requested, served, $13::jsonb, prompt, completion, cost, status, latency, estimated, stream, created_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::bigint[], $8::int[], $9::int[], $10::bool[], $11::bool[], $12::timestamptz[])
           AS t(id, key_id, requested, served, prompt, completion, cost, status, latency, estimated, stream, created_at)`,
        [c.id, c.keyId, c.requested, c.served, c.prompt, c.completion, c.cost, c.status, c.latency, c.estimated, c.stream, c.createdAt, ATTEMPTS],
      );
    }
    await client.query('VACUUM ANALYZE usage_ledger');
  } finally {
    await client.end();
  }
}

// The questions timed: what an operator, the dashboard and the CLI ask.
const hotKey = keyId(0);
const midKey = keyId(37);
const day = (offset: number) => new Date(END - offset * 86_400_000).toISOString();
const QUERIES: Array<{ name: string; filter: UsageFilter }> = [
  { name: 'all time, total', filter: {} },
  { name: 'all time, group_by=key', filter: { groupBy: 'key' } },
  { name: 'all time, group_by=model', filter: { groupBy: 'model' } },
  { name: 'all time, group_by=day', filter: { groupBy: 'day' } },
  { name: 'busiest key, last 30 days, group_by=day', filter: { keyId: hotKey, since: day(30), groupBy: 'day' } },
  { name: 'one key, one model, odd since/until', filter: { keyId: midKey, model: MODELS[3], since: '2026-08-03T13:17:00Z', until: '2026-09-14T08:05:30Z' } },
  { name: 'one model, last 7 days + 5 h, group_by=key', filter: { model: MODELS[1], since: new Date(END - 7 * 86_400_000 - 5 * 3_600_000).toISOString(), groupBy: 'key' } },
  { name: 'last 24 h (two partial days), group_by=model', filter: { since: new Date(END - 86_400_000 - 43_200_000).toISOString(), until: new Date(END - 43_200_000).toISOString(), groupBy: 'model' } },
];

function query(filter: UsageFilter): string {
  const params = new URLSearchParams();
  if (filter.keyId) params.set('key_id', filter.keyId);
  if (filter.model) params.set('model', filter.model);
  if (filter.since) params.set('since', filter.since);
  if (filter.until) params.set('until', filter.until);
  if (filter.groupBy) params.set('group_by', filter.groupBy);
  return params.toString();
}

/** The same question of the raw ledger with its indexes: the pre-rollup implementation. */
function ledgerSql(filter: UsageFilter, dialect: 'sqlite' | 'postgres'): { sql: string; params: unknown[] } {
  const conds: string[] = [];
  const params: unknown[] = [];
  const add = (cond: string, value: unknown) => {
    params.push(value);
    conds.push(cond.replace('?', dialect === 'postgres' ? `$${params.length}` : '?'));
  };
  if (filter.keyId) add('key_id = ?', filter.keyId);
  if (filter.model) add('served_model = ?', filter.model);
  if (filter.since) add('created_at >= ?', new Date(filter.since).toISOString());
  if (filter.until) add('created_at < ?', new Date(filter.until).toISOString());
  const where = conds.length ? `WHERE ${conds.join(' AND ')}` : '';
  const day = dialect === 'postgres' ? `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')` : 'substr(created_at, 1, 10)';
  const group = filter.groupBy === 'key' ? 'key_id' : filter.groupBy === 'model' ? 'served_model' : filter.groupBy === 'day' ? day : null;
  const totals = 'COUNT(*) AS requests, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, COALESCE(SUM(completion_tokens), 0) AS completion_tokens, COALESCE(SUM(cost_nanos), 0) AS cost_nanos, ' +
    'COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, COALESCE(SUM(cache_write_1h_tokens), 0) AS cache_write_1h_tokens, COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens';
  const order = dialect === 'postgres' ? `(${group}) IS NULL, (${group}) COLLATE "C"` : 'g IS NULL, g';
  const sql = group ? `SELECT ${group} AS g, ${totals} FROM usage_ledger ${where} GROUP BY 1 ORDER BY ${order}` : `SELECT ${totals} FROM usage_ledger ${where}`;
  return { sql, params };
}

function rowsFromLedger(rows: Array<Record<string, unknown>>, filter: UsageFilter): UsageRow[] {
  const field = filter.groupBy === 'key' ? 'key_id' : filter.groupBy === 'model' ? 'model' : 'day';
  return rows.map((row) => ({
    ...(filter.groupBy && row.g !== null ? { [field]: String(row.g) } : {}),
    requests: Number(row.requests),
    prompt_tokens: Number(row.prompt_tokens),
    completion_tokens: Number(row.completion_tokens),
    cost_usd: Number(row.cost_nanos) / 1e9,
    cache_read_tokens: Number(row.cache_read_tokens),
    cache_write_tokens: Number(row.cache_write_tokens),
    cache_write_1h_tokens: Number(row.cache_write_1h_tokens),
    reasoning_tokens: Number(row.reasoning_tokens),
  }));
}

interface Timing {
  median: number;
  p95: number;
  max: number;
}

async function time(runs: number, fn: () => Promise<unknown>): Promise<Timing> {
  await fn(); // warm: statement caches, pages
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)]!, p95: samples[Math.min(samples.length - 1, Math.ceil(samples.length * 0.95) - 1)]!, max: samples.at(-1)! };
}

const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

interface Target {
  name: 'sqlite' | 'postgres';
  store: Store;
  gateway: EmbeddedGateway;
  ledger: (filter: UsageFilter) => Promise<UsageRow[]>;
  rollupRows: () => Promise<number>;
  close: () => Promise<void>;
}

async function sqliteTarget(): Promise<{ target: Target; loadSeconds: number; rollupSeconds: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-usage-bench-'));
  const file = join(dir, 'switchboard.db');
  (await openSqliteStore(file)).close(); // creates the schema
  let started = performance.now();
  await loadSqlite(file);
  const loadSeconds = (performance.now() - started) / 1000;
  const store = await openSqliteStore(file);
  started = performance.now();
  await store.rebuildUsageRollups();
  const rollupSeconds = (performance.now() - started) / 1000;
  const raw = new Database(file, { readonly: true });
  const gateway = await startGateway({ SWITCHBOARD_DATA_DIR: dir });
  return {
    loadSeconds,
    rollupSeconds,
    target: {
      name: 'sqlite',
      store,
      gateway,
      async ledger(filter) {
        const { sql, params } = ledgerSql(filter, 'sqlite');
        return rowsFromLedger(raw.prepare(sql).all(...params) as Array<Record<string, unknown>>, filter);
      },
      async rollupRows() {
        return Number(raw.prepare('SELECT COUNT(*) FROM usage_daily').pluck().get());
      },
      async close() {
        await gateway.close();
        await store.close();
        raw.close();
        rmSync(dir, { recursive: true, force: true });
      },
    },
  };
}

async function postgresTarget(url: string): Promise<{ target: Target; loadSeconds: number; rollupSeconds: number }> {
  const schema = `sb_usage_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await (await openPostgresStore(url, { schema })).close(); // creates the schema
  let started = performance.now();
  await loadPostgres(url, schema);
  const loadSeconds = (performance.now() - started) / 1000;
  const store = await openPostgresStore(url, { schema });
  started = performance.now();
  await store.rebuildUsageRollups();
  const rollupSeconds = (performance.now() - started) / 1000;
  await admin.query(`ANALYZE ${schema}.usage_daily`);
  const raw = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await raw.connect();
  // The gateway opens PostgreSQL with its usual settings; the schema comes in through the URL.
  const separator = url.includes('?') ? '&' : '?';
  const gateway = await startGateway({ DATABASE_URL: `${url}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}` });
  return {
    loadSeconds,
    rollupSeconds,
    target: {
      name: 'postgres',
      store,
      gateway,
      async ledger(filter) {
        const { sql, params } = ledgerSql(filter, 'postgres');
        return rowsFromLedger((await raw.query(sql, params)).rows, filter);
      },
      async rollupRows() {
        return Number((await raw.query('SELECT COUNT(*) AS n FROM usage_daily')).rows[0].n);
      },
      async close() {
        await gateway.close();
        await store.close();
        await raw.end();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      },
    },
  };
}

async function startGateway(environment: Record<string, string>): Promise<EmbeddedGateway> {
  const dataDir = environment.SWITCHBOARD_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'sb-usage-bench-gw-'));
  return startEmbeddedGateway({
    environment: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN, SWITCHBOARD_DATA_DIR: dataDir, ...environment },
  });
}

async function viaApi(gateway: EmbeddedGateway, filter: UsageFilter): Promise<UsageRow[]> {
  const response = await fetch(`${gateway.url}/admin/v1/usage?${query(filter)}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const body = (await response.json()) as { data: UsageRow[] };
  if (response.status !== 200) throw new Error(`usage API answered ${response.status}: ${JSON.stringify(body)}`);
  return body.data;
}

async function writePath(target: Target): Promise<{ perRecordUs: number; records: number }> {
  const records = target.name === 'sqlite' ? 20_000 : 5_000;
  const concurrency = target.name === 'sqlite' ? 1 : 8;
  const c = generate(ROWS, ROWS + records);
  const now = Date.now();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < records; i = next++) {
        await target.store.recordUsage({
          id: `${c.id[i]}_w`,
          keyId: c.keyId[i]!,
          requestedModel: c.requested[i]!,
          servedModel: c.served[i]!,
          attempts: [],
          promptTokens: c.prompt[i]!,
          completionTokens: c.completion[i]!,
          costNanos: c.cost[i]!,
          status: c.status[i]!,
          latencyMs: c.latency[i]!,
          estimated: c.estimated[i]!,
          stream: c.stream[i]!,
          createdAt: new Date(now - i).toISOString(),
        });
      }
    }),
  );
  return { perRecordUs: ((performance.now() - started) * 1000) / records, records };
}

async function bench(target: Target, loadSeconds: number, rollupSeconds: number): Promise<string> {
  const lines: string[] = [];
  lines.push(`### ${target.name === 'sqlite' ? 'SQLite (embedded default)' : 'PostgreSQL (scaled out)'}`, '');
  lines.push(`Ledger: ${ROWS.toLocaleString('en-US')} rows over ${DAYS} days; bulk load ${loadSeconds.toFixed(1)} s; rollup built from it in ${rollupSeconds.toFixed(1)} s (${(await target.rollupRows()).toLocaleString('en-US')} rollup rows).`, '');
  lines.push('| question | API over HTTP, median / p95 / max ms | Store.queryUsage median ms | raw ledger (pre-rollup) median ms | answers equal |');
  lines.push('|---|---|---|---|---|');
  for (const { name, filter } of QUERIES) {
    const api = await time(ITERATIONS, () => viaApi(target.gateway, filter));
    const direct = await time(ITERATIONS, () => target.store.queryUsage(filter));
    const raw = await time(Math.max(3, Math.floor(ITERATIONS / 3)), () => target.ledger(filter));
    const same = JSON.stringify(await viaApi(target.gateway, filter)) === JSON.stringify(await target.ledger(filter));
    if (!same) process.exitCode = 1;
    lines.push(`| ${name} | ${ms(api.median)} / ${ms(api.p95)} / ${ms(api.max)} | ${ms(direct.median)} | ${ms(raw.median)} | ${same ? 'yes' : '**NO**'} |`);
    process.stderr.write(`${target.name}: ${name}: api ${ms(api.median)} ms, store ${ms(direct.median)} ms, ledger ${ms(raw.median)} ms${same ? '' : ' MISMATCH'}\n`);
  }
  const seed = await time(ITERATIONS, () => target.store.spentNanosSince(hotKey, '2026-09-01T00:00:00.000Z'));
  const seedAll = await time(ITERATIONS, () => target.store.spentNanosSince(hotKey, '1970-01-01T00:00:00.000Z'));
  lines.push('', `Budget seed (spentNanosSince, busiest key): this month ${ms(seed.median)} ms, all time ${ms(seedAll.median)} ms (median).`);
  const write = await writePath(target);
  lines.push(`Write path (recordUsage: ledger row + key spend + rollup upsert, one transaction): ${write.perRecordUs.toFixed(0)} µs per record over ${write.records.toLocaleString('en-US')} records${target.name === 'postgres' ? ', 8 concurrent' : ', one at a time'}.`, '');
  return lines.join('\n');
}

const load = () => loadavg().map((value) => value.toFixed(1)).join(' / ');
const report: string[] = [
  `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}; load average (1/5/15 min) at start ${load()}. ${ITERATIONS} timed runs per question after one warm-up (raw ledger: ${Math.max(3, Math.floor(ITERATIONS / 3))}).`,
  '',
];
const wanted = args.store === 'both' ? ['sqlite', 'postgres'] : [args.store];
for (const name of wanted) {
  if (name === 'postgres' && !process.env.DATABASE_URL) throw new Error('--store postgres needs DATABASE_URL');
  process.stderr.write(`${name}: generating and loading ${ROWS} ledger rows...\n`);
  const { target, loadSeconds, rollupSeconds } = name === 'sqlite' ? await sqliteTarget() : await postgresTarget(process.env.DATABASE_URL!);
  try {
    report.push(await bench(target, loadSeconds, rollupSeconds));
  } finally {
    await target.close();
  }
}
report.push(`Load average at the end: ${load()}.`);
process.stdout.write(`${report.join('\n')}\n`);
