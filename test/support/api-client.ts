import type { TestDeployment } from './gateway-harness.js';

// Small helpers for talking to a deployment over HTTP, as any client would.

export interface CreatedKey {
  id: string;
  key: string;
  key_hint: string;
  [field: string]: unknown;
}

export async function adminRequest(deployment: TestDeployment, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${deployment.url()}${path}`, {
    method,
    headers: { authorization: `Bearer ${deployment.adminToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

export async function createKey(deployment: TestDeployment, fields: Record<string, unknown> = {}): Promise<CreatedKey> {
  const { status, body } = await adminRequest(deployment, 'POST', '/admin/v1/keys', { name: 'test key', ...fields });
  if (status !== 201) throw new Error(`Key creation failed: ${status} ${JSON.stringify(body)}`);
  return body as CreatedKey;
}

export function chat(deployment: TestDeployment, key: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${deployment.url()}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

export const hello = [{ role: 'user', content: 'Say hello' }];

/** Waits until `check` passes or the time runs out (for effects that land just after a response). */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

/** A GET /admin/v1/requests record in the terms the suites compare: costs in integer nano-USD. */
export interface LedgerView {
  id: string;
  keyId: string;
  requestedModel: string;
  servedModel: string | null;
  status: number;
  promptTokens: number;
  completionTokens: number;
  costNanos: number;
  estimated: boolean;
  stream: boolean;
  attempts: Array<Record<string, unknown>>;
}

export function ledgerView(record: Record<string, any>): LedgerView {
  return {
    id: record.id,
    keyId: record.key_id,
    requestedModel: record.requested_model,
    servedModel: record.served_model,
    status: record.status,
    promptTokens: record.prompt_tokens,
    completionTokens: record.completion_tokens,
    costNanos: Math.round(record.cost_usd * 1e9),
    estimated: record.estimated,
    stream: record.stream,
    attempts: record.attempts,
  };
}
