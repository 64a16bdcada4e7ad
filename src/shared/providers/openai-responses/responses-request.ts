import type { InternalRequest } from '../../internal/request.js';
import type { AdapterContext } from '../chat-adapter.js';

// A Responses client's request as the body of POST {base_url}/responses: its own items and fields
// (hosted tools, include, encrypted reasoning...), which the surface put in
// extras['openai-responses'], with the upstream model and the sampling settings the gateway may
// have adjusted. The gateway keeps its own stored responses, so the provider is asked not to store.

type Json = Record<string, unknown>;

/** The client's own Responses request, when it came from a Responses client. */
export function nativeResponsesFields(request: InternalRequest): Json | undefined {
  return request.source === 'openai' ? request.extras?.['openai-responses'] : undefined;
}

export function buildResponsesBody(request: InternalRequest, fields: Json, context: AdapterContext): string {
  const body: Json = { ...fields };
  body.model = context.upstreamModel;
  body.store = false;
  if (request.maxOutputTokens !== undefined) body.max_output_tokens = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (context.stream) body.stream = true;
  else delete body.stream;
  return JSON.stringify(body);
}
