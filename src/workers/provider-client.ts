import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import type { ProviderConfig } from '../shared/catalog/catalog-types.js';
import { detailTextLimit, ourFailureMessage } from '../shared/providers/failure-messages.js';
import type { ProviderHttpRequest, UpstreamFailure } from '../shared/providers/chat-adapter.js';
import { capText } from '../shared/providers/redact.js';

// The only place that talks HTTP to providers: one keep-alive pool per provider, so repeated
// requests reuse warm connections, and failures are classified for the fallback chain.

export class UpstreamFailureError extends Error {
  constructor(readonly failure: UpstreamFailure) {
    super(failure.message);
  }
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/** Errors of undici that mean the gateway built something it cannot send, not that the network failed. */
const ourUndiciErrors = [undiciErrors.InvalidArgumentError, undiciErrors.InvalidReturnValueError, undiciErrors.NotSupportedError];

/** A failure of the network or the peer: undici's own errors and the system's socket errors (ECONNREFUSED, EPIPE, ...). */
function isNetworkError(error: unknown): boolean {
  if (ourUndiciErrors.some((type) => error instanceof type)) return false;
  if (error instanceof undiciErrors.UndiciError) return true;
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && /^(?:(?!ERR_)E[A-Z0-9_]+|UND_ERR_[A-Z_]+)$/.test(code);
}

/**
 * Maps errors thrown during an attempt to failure kinds; `timeoutReason` names a timer of ours that
 * fired. Only network failures count as the provider's: anything else (a stack overflow while
 * serialising, a bug of ours) is `internal`, so a client cannot make a healthy deployment look down.
 * Messages are ours; what the error said (it may name host:port) is only the detail.
 */
export function classifyNetworkError(error: unknown, timeoutReason?: string): UpstreamFailure {
  if (timeoutReason) return { kind: 'timeout', message: timeoutReason };
  if (error instanceof undiciErrors.ConnectTimeoutError) return { kind: 'timeout', message: 'Connecting to the provider timed out.' };
  if (error instanceof undiciErrors.HeadersTimeoutError) return { kind: 'timeout', message: 'The provider did not answer in time.' };
  if (error instanceof undiciErrors.BodyTimeoutError) return { kind: 'timeout', message: 'The provider stopped sending data.' };
  if (error instanceof UpstreamFailureError) return error.failure;
  const name = (error as { name?: string })?.name;
  if (name === 'AbortError' || (error as { code?: string })?.code === 'UND_ERR_ABORTED') return { kind: 'cancelled', message: 'The request was cancelled.' };
  const detail = capText(`${name ?? 'Error'}: ${(error as Error)?.message ?? String(error)}`, detailTextLimit);
  if (!isNetworkError(error)) return { kind: 'internal', message: ourFailureMessage('internal'), detail };
  const code = (error as { code?: string }).code;
  return { kind: 'connection', message: `${ourFailureMessage('connection')}${code ? ` (${code})` : ''}`, detail };
}

export class ProviderClient {
  private readonly agents = new Map<string, Agent>();
  private readonly urls = new Map<string, { origin: string; path: string }>();

  private agentFor(provider: ProviderConfig): Agent {
    let agent = this.agents.get(provider.name);
    if (!agent) {
      agent = new Agent({
        connections: 512,
        keepAliveTimeout: 30_000,
        connect: { timeout: provider.timeouts.connectMs },
      });
      this.agents.set(provider.name, agent);
    }
    return agent;
  }

  /** Origin and path of a provider URL; parsed once per distinct URL (the catalog bounds them). */
  private split(raw: string): { origin: string; path: string } {
    let split = this.urls.get(raw);
    if (!split) {
      const url = new URL(raw);
      split = { origin: url.origin, path: url.pathname + url.search };
      if (this.urls.size >= 1000) this.urls.clear();
      this.urls.set(raw, split);
    }
    return split;
  }

  /**
   * Sends a request and resolves once response headers arrive. `headersTimeoutMs` bounds the wait
   * for headers, `bodyIdleTimeoutMs` the silence between body chunks.
   */
  async send(request: ProviderHttpRequest, provider: ProviderConfig, signal: AbortSignal, limits: { headersTimeoutMs: number; bodyIdleTimeoutMs: number }): Promise<UpstreamResponse> {
    const url = this.split(request.url);
    const response = await this.agentFor(provider).request({
      origin: url.origin,
      path: url.path,
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal,
      headersTimeout: limits.headersTimeoutMs,
      bodyTimeout: limits.bodyIdleTimeoutMs,
    });
    return { status: response.statusCode, headers: flattenHeaders(response.headers), body: response.body };
  }

  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((agent) => agent.close().catch(() => {})));
    this.agents.clear();
  }
}
