import type { CacheHint, InternalMessage, OpaquePart, WireExtras, WireFormat } from './parts.js';

// The request a job carries: what a surface parsed from its client API, before any provider's
// format. Sampling values use OpenAI's scales (temperature 0..2); other formats convert.

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  inputSchema: Record<string, unknown>;
  strict?: boolean;
  cache?: CacheHint;
  extras?: WireExtras;
}

/** Function tools, or a provider's own tool (web search, code execution) that only its format can send. */
export type InternalTool = FunctionTool | OpaquePart;

export type ToolChoice = { type: 'auto' | 'none' | 'required' } | { type: 'tool'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema?: Record<string, unknown>; strict?: boolean; description?: string };

export interface ReasoningConfig {
  /** OpenAI's reasoning effort (minimal, low, medium, high). */
  effort?: string;
  /** Anthropic's thinking: enabled with a budget, disabled, or adaptive. */
  mode?: 'enabled' | 'disabled' | 'adaptive';
  budgetTokens?: number;
}

export interface InternalRequest {
  /** The client's wire format: a target of the same format gets every field the client sent. */
  source: WireFormat;
  /** The model as the client named it (an id or an alias). */
  model: string;
  fallbacks?: string[];
  messages: InternalMessage[];
  tools?: InternalTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  /** Choices to generate; 1 unless the client asked for more. */
  n: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseFormat?: ResponseFormat;
  reasoning?: ReasoningConfig;
  /** The end user, for the provider's abuse monitoring. */
  user?: string;
  stream: boolean;
  /** The client asked for usage at the end of the stream. */
  includeUsage?: boolean;
  /** Request fields of the client's format that are not modelled: sent only to targets of that format. */
  extras?: WireExtras;
  /** Headers meant for targets of the client's format (anthropic-beta, anthropic-version). */
  wireHeaders?: Record<string, string>;
}
