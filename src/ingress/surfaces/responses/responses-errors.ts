import type { GatewayError } from '../../../shared/errors.js';
import type { RenderedError } from '../../pipeline/surface.js';

// Errors in OpenAI's shape, {"error":{"message","type","param","code"}}, which the openai SDKs,
// the Vercel AI SDK and Codex all read.

export function renderResponsesError(error: GatewayError): RenderedError {
  const headers: Array<[string, string]> = [];
  if (error.retryAfterSeconds !== undefined) headers.push(['retry-after', String(Math.max(1, Math.ceil(error.retryAfterSeconds)))]);
  if (error.headers) headers.push(...error.headers);
  return { status: error.status, body: JSON.stringify(error.toBody()), headers };
}
