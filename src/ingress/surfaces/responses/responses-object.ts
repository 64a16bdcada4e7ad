import { usageSplit, type Usage } from '../../../shared/usage.js';
import type { ResponsesRequest } from './responses-schema.js';

// The response object around the output: the request's settings echoed back, as OpenAI does, and
// usage in the Responses shape. Ids: `resp_<32 hex>` from the job id, items `<kind>_<same hex>_<n>`,
// so an item id names the response it belongs to (item_reference resolution needs no index).

type Json = Record<string, unknown>;

export function responseIdOf(jobId: string): string {
  return `resp_${jobId.replaceAll('-', '')}`;
}

/** The job id behind a response id, or undefined for an id of another shape. */
export function jobIdOf(responseId: string): string | undefined {
  const hex = /^resp_([0-9a-f]{32})$/.exec(responseId)?.[1];
  return hex ? `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}` : undefined;
}

export function itemId(responseId: string, prefix: 'msg' | 'fc' | 'rs', index: number | string): string {
  return `${prefix}_${responseId.slice(5)}_${index}`;
}

/** The response an item id belongs to, when the gateway made it. */
export function responseIdOfItem(id: string): string | undefined {
  const hex = /^(?:msg|fc|rs)_([0-9a-f]{32})_\w+$/.exec(id)?.[1];
  return hex ? `resp_${hex}` : undefined;
}

export function responsesUsage(usage: Usage): Json {
  const split = usageSplit(usage);
  const cached = split.cacheReadTokens;
  const reasoning = split.reasoningTokens;
  const body: Json = {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: usage.total_tokens,
  };
  if (split.cacheWriteTokens > 0) (body.input_tokens_details as Json).cache_write_tokens = split.cacheWriteTokens;
  if (usage.estimated) body.estimated = true;
  if (usage.cost !== undefined) body.cost = usage.cost;
  return body;
}

/** The fields of the response object that come from the request. */
export function echoedSettings(request: ResponsesRequest): Json {
  return {
    background: request.background === true,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? null },
    store: request.store !== false,
    temperature: request.temperature ?? 1,
    text: { format: request.text?.format ?? { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? 1,
    truncation: 'disabled',
    user: request.user ?? null,
  };
}

export interface ResponseShell {
  id: string;
  createdAt: number;
  model: string;
  settings: Json;
}

export function responseObject(shell: ResponseShell, status: string, output: Json[], extra: Json = {}): Json {
  return {
    id: shell.id,
    object: 'response',
    created_at: shell.createdAt,
    status,
    error: null,
    incomplete_details: null,
    model: shell.model,
    output,
    usage: null,
    ...shell.settings,
    ...extra,
  };
}
