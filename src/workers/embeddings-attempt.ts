import { isEmbeddingsApi, type ModelDeployment, type ProviderConfig } from '../shared/catalog/catalog-types.js';
import type { Embedding, EmbeddingsRequest } from '../shared/embeddings/embeddings-request.js';
import { GatewayError } from '../shared/errors.js';
import { embeddingsAdapterFor } from '../shared/providers/embeddings-adapter-registry.js';
import type { UpstreamFailure } from '../shared/providers/chat-adapter.js';
import { classifyNetworkError, type ProviderClient } from './provider-client.js';
import { AttemptSignal } from './target-attempt.js';

// One embeddings call to one deployment. Nothing is streamed, so there is no first token: every
// failure may still fall back, and the provider's whole time budget (total_ms) applies.

export type EmbeddingsAttemptResult =
  | { ok: true; embeddings: Embedding[]; promptTokens?: number; latencyMs: number }
  | { ok: false; failure: UpstreamFailure; started: false; gatewayError?: GatewayError };

export interface EmbeddingsAttemptInput {
  request: EmbeddingsRequest;
  deployment: ModelDeployment;
  provider: ProviderConfig;
  client: ProviderClient;
  signal: AbortSignal;
}

export async function runEmbeddingsAttempt(input: EmbeddingsAttemptInput): Promise<EmbeddingsAttemptResult> {
  const { provider, request } = input;
  const fail = (failure: UpstreamFailure, gatewayError?: GatewayError): EmbeddingsAttemptResult => ({ ok: false, failure, started: false, ...(gatewayError ? { gatewayError } : {}) });
  if (!isEmbeddingsApi(provider.api)) {
    // The catalog refuses such models; a hand-built one still gets an answer, not a crash.
    const error = new GatewayError('invalid_value', `The provider ${provider.name} speaks ${provider.api}, which has no embeddings endpoint.`, { param: 'model' });
    return fail({ kind: 'bad_request', status: 400, message: error.message }, error);
  }
  const adapter = embeddingsAdapterFor(provider.api);
  let httpRequest;
  try {
    httpRequest = adapter.buildRequest(request, { provider, upstreamModel: input.deployment.upstreamModel });
  } catch (error) {
    if (error instanceof GatewayError) return fail({ kind: 'bad_request', status: error.status, message: error.message }, error);
    throw error;
  }
  const signal = new AttemptSignal(input.signal);
  signal.arm(provider.timeouts.totalMs, `The provider did not answer within ${provider.timeouts.totalMs} ms.`);
  const startedAt = performance.now();
  try {
    const limits = { headersTimeoutMs: provider.timeouts.totalMs, bodyIdleTimeoutMs: provider.timeouts.totalMs };
    const response = await input.client.send(httpRequest, provider, signal.controller.signal, limits);
    const text = await response.body.text();
    if (response.status !== 200) return fail(adapter.parseError(response.status, response.headers, text));
    let parsed;
    try {
      parsed = adapter.parseResponse(text, request.inputs.length);
    } catch (error) {
      // A garbled answer is the provider's fault: another deployment or fallback may do better.
      return fail({ kind: 'server_error', status: response.status, message: `The provider's answer could not be read: ${(error as Error).message}` });
    }
    return { ok: true, ...parsed, latencyMs: Math.round(performance.now() - startedAt) };
  } catch (error) {
    const failure = classifyNetworkError(error, signal.timeoutReason);
    if (input.signal.aborted && !signal.timeoutReason) failure.kind = 'cancelled';
    return fail(failure);
  } finally {
    signal.dispose();
  }
}
