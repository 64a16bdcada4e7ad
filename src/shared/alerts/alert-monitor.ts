import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { periodStart } from '../counters/period.js';
import { usdToNanos } from '../pricing.js';
import type { AlertDelivery, BudgetAlert, BudgetPeriod, Store } from '../store/store.js';

// Budget alerts: after a request's cost is in the ledger, the spend of its key (and of the key's
// project) in the current budget period is compared with each configured threshold. A threshold
// reached fires one webhook per period: the delivery row is claimed first, and the store's unique
// index (subject, threshold, webhook, period start) lets exactly one process win, however many
// workers settle requests at that moment. The body is signed with HMAC-SHA256 (header
// x-switchboard-signature: sha256=<hex>) and retried with exponential backoff; every attempt is
// recorded on the delivery row, which GET /admin/v1/alerts shows.

export const SIGNATURE_HEADER = 'x-switchboard-signature';

export interface AlertMonitorOptions {
  store: Store;
  logger: Logger;
  /** The HMAC key receivers verify with (SWITCHBOARD_WEBHOOK_SECRET, else the admin token). */
  secret: string;
  /** Delay before the first retry; each further retry waits four times longer. */
  retryBaseMs?: number;
  /** Attempts in all, the first included. */
  maxAttempts?: number;
  timeoutMs?: number;
}

export interface AlertMonitor {
  /** Checks the key's and its project's thresholds; never throws, never delays the caller. */
  check(keyId: string, projectId: string | undefined, now?: number): void;
  /** Waits for checks and deliveries under way (shutdown, tests). */
  idle(): Promise<void>;
}

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

interface Subject {
  kind: 'key' | 'project';
  id: string;
  name: string;
  budgetUsd: number | null;
  budgetPeriod: BudgetPeriod;
  alerts: BudgetAlert[];
}

export function createAlertMonitor(options: AlertMonitorOptions): AlertMonitor {
  const { store, logger } = options;
  const retryBaseMs = options.retryBaseMs ?? 1000;
  const maxAttempts = options.maxAttempts ?? 5;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const running = new Set<Promise<void>>();

  const track = (work: Promise<void>) => {
    running.add(work);
    void work.finally(() => running.delete(work));
  };

  async function deliver(delivery: AlertDelivery, body: string): Promise<void> {
    const signature = signBody(options.secret, body);
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      let lastStatus: number | null = null;
      let lastError: string | null = null;
      try {
        const response = await fetch(delivery.webhookUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature, 'x-switchboard-delivery': delivery.id, 'user-agent': 'switchboard-alerts' },
          body,
          signal: AbortSignal.timeout(timeoutMs),
          redirect: 'manual',
        });
        lastStatus = response.status;
        await response.body?.cancel();
        if (response.ok) {
          await store.updateAlertDelivery(delivery.id, { status: 'delivered', attempts: attempt, lastStatus, lastError: null, deliveredAt: new Date().toISOString() });
          return;
        }
        lastError = `HTTP ${response.status}`;
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error);
      }
      const final = attempt === maxAttempts;
      await store.updateAlertDelivery(delivery.id, { status: final ? 'failed' : 'pending', attempts: attempt, lastStatus, lastError, deliveredAt: null });
      if (final) {
        logger.warn({ deliveryId: delivery.id, webhook: delivery.webhookUrl, lastError }, 'budget alert could not be delivered');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, retryBaseMs * 4 ** (attempt - 1)));
    }
  }

  async function checkSubject(subject: Subject, spentNanos: number, now: number): Promise<void> {
    if (subject.budgetUsd === null || subject.alerts.length === 0) return;
    const budgetNanos = usdToNanos(subject.budgetUsd);
    const start = periodStart(subject.budgetPeriod, now);
    for (const alert of subject.alerts) {
      // threshold% of the budget, in integer nano-USD; a zero budget is reached at once.
      if (spentNanos * 100 < alert.thresholdPercent * budgetNanos) continue;
      const delivery: AlertDelivery = {
        id: `alert_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
        subjectKind: subject.kind, subjectId: subject.id, thresholdPercent: alert.thresholdPercent, webhookUrl: alert.webhookUrl,
        periodStart: start, status: 'pending', attempts: 0, lastStatus: null, lastError: null, createdAt: new Date(now).toISOString(), deliveredAt: null,
      };
      if (!(await store.claimAlertDelivery(delivery))) continue;
      const body = JSON.stringify({
        type: 'budget.threshold_reached',
        id: delivery.id,
        [subject.kind === 'key' ? 'key_id' : 'project_id']: subject.id,
        name: subject.name,
        threshold_percent: alert.thresholdPercent,
        budget_usd: subject.budgetUsd,
        budget_period: subject.budgetPeriod,
        period_start: start,
        spent_usd: spentNanos / 1e9,
        created_at: delivery.createdAt,
      });
      track(deliver(delivery, body));
    }
  }

  async function check(keyId: string, projectId: string | undefined, now: number): Promise<void> {
    const key = await store.getKey(keyId);
    if (key && key.budgetUsd !== null && key.alerts.length > 0) {
      const spent = await store.spentNanosSince(key.id, periodStart(key.budgetPeriod, now));
      await checkSubject({ kind: 'key', ...key }, spent, now);
    }
    const project = projectId === undefined ? null : await store.getProject(projectId);
    if (project && project.budgetUsd !== null && project.alerts.length > 0) {
      const spent = await store.projectSpentNanosSince(project.id, periodStart(project.budgetPeriod, now));
      await checkSubject({ kind: 'project', ...project }, spent, now);
    }
  }

  return {
    check(keyId, projectId, now = Date.now()) {
      track(check(keyId, projectId, now).catch((error: unknown) => logger.error({ err: error, keyId }, 'could not check budget alerts')));
    },
    async idle() {
      while (running.size > 0) await Promise.all([...running]);
    },
  };
}

/**
 * The monitor a worker process runs, from its environment: SWITCHBOARD_WEBHOOK_SECRET (else the
 * admin token) signs; SWITCHBOARD_ALERT_RETRY_MS sets the first retry's delay.
 */
export function alertMonitorFromEnvironment(store: Store, logger: Logger, environment: NodeJS.ProcessEnv, adminToken?: string): AlertMonitor {
  const retry = Number(environment.SWITCHBOARD_ALERT_RETRY_MS);
  return createAlertMonitor({
    store,
    logger,
    secret: environment.SWITCHBOARD_WEBHOOK_SECRET || adminToken || environment.SWITCHBOARD_ADMIN_TOKEN || '',
    ...(Number.isFinite(retry) && retry > 0 ? { retryBaseMs: retry } : {}),
  });
}
