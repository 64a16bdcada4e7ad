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
