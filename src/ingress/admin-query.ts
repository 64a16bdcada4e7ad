import { z } from 'zod';
import { GatewayError } from '../shared/errors.js';
import type { LedgerEntry, UsageFilter } from '../shared/store/store.js';

// The query strings of GET /admin/v1/usage and /admin/v1/requests, and the request records the
// latter answers with. Inputs are checked here so that both stores see only values they can
// compare: a time outside years 0001-9999 sorts wrongly as text in SQLite and is refused by
// PostgreSQL, and PostgreSQL refuses NUL in text.

export const maxQueryTextLength = 200;

// Years are four digits: expanded years (+010000-01-01) and year 0 (which PostgreSQL lacks) are out.
const isoStart = /^\d{4}-\d{2}-\d{2}(?:$|T)/;
const normalizedRange = /^(?!0000)\d{4}-/;

export const isoTime = z.string().refine((value) => {
  if (!isoStart.test(value)) return false;
  const ms = Date.parse(value);
  // An offset can push a valid-looking time past 9999-12-31T23:59:59Z; check the UTC result too.
  return !Number.isNaN(ms) && normalizedRange.test(new Date(ms).toISOString());
}, 'must be an ISO 8601 date or time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ) between years 0001 and 9999');

export const filterText = z
  .string()
  .max(maxQueryTextLength)
  .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), 'must not contain control characters');

const common = { key_id: filterText.optional(), model: filterText.optional(), since: isoTime.optional(), until: isoTime.optional() };
const usageSchema = z.object({ ...common, group_by: z.enum(['key', 'model', 'day']).optional() }).strict();
const requestsSchema = z.object({ ...common, limit: z.coerce.number().int().min(1).max(1000).optional() }).strict();

/** Throws the admin API's 400 for the first problem zod found. */
export function validate<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const param = issue.path.join('.') || null;
  if (issue.code === 'unrecognized_keys') throw new GatewayError('unknown_parameter', `Unrecognized argument: ${issue.keys.join(', ')}`, { param: issue.keys[0] ?? null });
  throw new GatewayError('invalid_value', `Invalid value for '${param ?? 'body'}': ${issue.message}`, { param });
}

function queryParameters(query: string): Record<string, string> {
  // An empty parameter (key_id=) means "any", as forms and scripts send it.
  return Object.fromEntries([...new URLSearchParams(query)].filter(([, value]) => value !== ''));
}

export function usageQuery(query: string): UsageFilter {
  const input = validate(usageSchema, queryParameters(query));
  return { keyId: input.key_id, model: input.model, since: input.since, until: input.until, groupBy: input.group_by };
}

export function requestsQuery(query: string): UsageFilter & { limit?: number } {
  const input = validate(requestsSchema, queryParameters(query));
  return { keyId: input.key_id, model: input.model, since: input.since, until: input.until, limit: input.limit };
}

/** A ledger record as /admin/v1/requests shows it: snake_case like every admin answer, money in USD. */
export function publicRequest(entry: LedgerEntry): Record<string, unknown> {
  return {
    id: entry.id,
    object: 'request',
    key_id: entry.keyId,
    requested_model: entry.requestedModel,
    served_model: entry.servedModel,
    status: entry.status,
    prompt_tokens: entry.promptTokens,
    completion_tokens: entry.completionTokens,
    cost_usd: entry.costNanos / 1e9,
    // The billed split: subsets of prompt_tokens (cache reads and writes, the 1-hour writes among
    // them) and of completion_tokens (reasoning), each priced at its own rate.
    cache_read_tokens: entry.cacheReadTokens ?? 0,
    cache_write_tokens: entry.cacheWriteTokens ?? 0,
    cache_write_1h_tokens: entry.cacheWrite1hTokens ?? 0,
    reasoning_tokens: entry.reasoningTokens ?? 0,
    estimated: entry.estimated,
    stream: entry.stream,
    latency_ms: entry.latencyMs,
    created_at: entry.createdAt,
    attempts: entry.attempts.map((attempt) => ({
      model: attempt.model,
      provider: attempt.provider,
      deployment: attempt.deployment ?? null,
      outcome: attempt.outcome,
      status: attempt.status ?? null,
      message: attempt.message ?? null,
      latency_ms: attempt.latencyMs,
      first_token_ms: attempt.firstTokenMs ?? null,
    })),
  };
}
