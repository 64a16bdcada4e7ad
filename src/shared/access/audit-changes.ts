import type { AuditChanges } from '../store/access-records.js';

// What an audit entry says changed: the public fields of a record before and after, field by
// field. Secrets never reach here (the public shapes carry none), and webhook URLs are cut to
// their origin, since chat webhooks (Slack, Teams) carry their credential in the path.

/** Fields of the public shape that are noise or sensitive in a change list. */
const skipped = new Set(['object', 'spent_usd', 'last_used_at', 'created_at', 'status', 'key_hint', 'key', 'token', 'secret', 'secret_hash']);

function redact(field: string, value: unknown): unknown {
  if (field !== 'alerts' || !Array.isArray(value)) return value;
  return value.map((alert: Record<string, unknown>) => ({ ...alert, webhook_url: webhookOrigin(alert.webhook_url) }));
}

/** A webhook URL cut to its origin: `https://hooks.slack.com/…`. */
export function webhookOrigin(url: unknown): unknown {
  if (typeof url !== 'string') return url;
  try {
    return `${new URL(url).origin}/…`;
  } catch {
    return '…';
  }
}

/** A copy of an admin answer with every webhook_url cut to its origin (what a viewer sees). */
export function withoutWebhookPaths(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutWebhookPaths);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([field, inner]) => [field, field === 'webhook_url' ? webhookOrigin(inner) : withoutWebhookPaths(inner)]));
}

/** Every field of a created record, as { field: { to } }. */
export function createdFields(after: Record<string, unknown>): AuditChanges {
  const changes: AuditChanges = {};
  for (const [field, value] of Object.entries(after)) {
    if (skipped.has(field) || field === 'id' || value === null) continue;
    changes[field] = { to: redact(field, value) };
  }
  return changes;
}

/** The fields that differ between two versions of a record, as { field: { from, to } }. */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): AuditChanges {
  const changes: AuditChanges = {};
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (skipped.has(field)) continue;
    const from = before[field] ?? null;
    const to = after[field] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[field] = { from: redact(field, from), to: redact(field, to) };
  }
  return changes;
}
