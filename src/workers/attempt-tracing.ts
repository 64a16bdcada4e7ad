import type { Span } from '@opentelemetry/api';
import type { ProviderApi } from '../shared/catalog/catalog-types.js';
import { endSpan, startAttemptSpan, tracingEnabled } from '../shared/observability/tracing.js';
import type { Usage } from '../shared/usage.js';
import type { ChainAttemptResult, ChainTarget } from './fallback-chain.js';

// One provider attempt as an OpenTelemetry span, in the GenAI semantic conventions' terms
// (gen_ai.system, gen_ai.request.model, gen_ai.response.model, gen_ai.usage.*, finish reasons).
// Never the prompt or the answer: spans leave the gateway for a tracing backend.

const systems: Record<ProviderApi, string> = { openai: 'openai', 'openai-responses': 'openai', azure: 'az.ai.openai', anthropic: 'anthropic', gemini: 'gcp.gemini' };

export function startAttempt(operation: string, target: ChainTarget): Span | undefined {
  if (!tracingEnabled()) return undefined;
  return startAttemptSpan(operation, {
    'gen_ai.operation.name': operation,
    'gen_ai.system': systems[target.provider.api],
    'gen_ai.request.model': target.deployment.upstreamModel,
    'switchboard.model': target.model.id,
    'switchboard.deployment': target.deployment.id,
    'server.address': hostOf(target.provider.baseUrl),
  });
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

interface ReportedResult {
  usage?: Usage;
  promptTokens?: number;
  choices?: Array<{ finishReason?: string }>;
}

export function endAttempt(span: Span | undefined, target: ChainTarget, result: ChainAttemptResult | undefined): void {
  if (!span) return;
  if (!result) return endSpan(span, {}, true, 'the attempt threw');
  if (!result.ok) {
    return endSpan(span, { 'error.type': result.failure.kind, ...(result.failure.status ? { 'http.response.status_code': result.failure.status } : {}), 'switchboard.started': result.started }, true, result.failure.kind);
  }
  const reported = result as ChainAttemptResult & ReportedResult;
  const usage = reported.usage;
  const finishReasons = (reported.choices ?? []).map((choice) => choice.finishReason).filter((reason): reason is string => typeof reason === 'string');
  endSpan(span, {
    'gen_ai.response.model': target.deployment.upstreamModel,
    ...(usage ? { 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens } : {}),
    ...(reported.promptTokens !== undefined ? { 'gen_ai.usage.input_tokens': reported.promptTokens } : {}),
    ...(finishReasons.length > 0 ? { 'gen_ai.response.finish_reasons': finishReasons } : {}),
  }, false);
}
