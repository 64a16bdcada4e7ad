import type { Usage } from '../../usage.js';
import type { OutputPart } from '../../internal/parts.js';
import type { CompletionChoice, FinishReason, NormalizedCompletion } from '../chat-adapter.js';

// Anthropic Messages response -> internal choice.

const finishReasons: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  // pause_turn means a server tool paused a long turn; for a Chat Completions client the turn is over.
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function anthropicFinishReason(stopReason: string | null | undefined): FinishReason {
  return (stopReason && finishReasons[stopReason]) || 'stop';
}

export interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** The writes by TTL (1-hour writes bill dearer than 5-minute ones); absent from older answers. */
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } | null;
  output_tokens_details?: { thinking_tokens?: number } | null;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/**
 * Anthropic's input_tokens excludes cached input, while OpenAI's prompt_tokens includes it, so cache
 * writes and reads are added back; reads are also reported as cached_tokens, as OpenAI does.
 */
export function anthropicUsage(raw: AnthropicUsage | undefined): Usage | undefined {
  if (!raw || typeof raw.input_tokens !== 'number' || typeof raw.output_tokens !== 'number') return undefined;
  const cacheRead = count(raw.cache_read_input_tokens);
  const cacheWrite = count(raw.cache_creation_input_tokens);
  const promptTokens = raw.input_tokens + cacheWrite + cacheRead;
  const details: Record<string, unknown> = { cached_tokens: cacheRead };
  if (cacheWrite > 0) details.cache_creation_tokens = cacheWrite;
  if (raw.cache_creation && cacheWrite > 0) {
    details.cache_creation = { ephemeral_5m_input_tokens: count(raw.cache_creation.ephemeral_5m_input_tokens), ephemeral_1h_input_tokens: count(raw.cache_creation.ephemeral_1h_input_tokens) };
  }
  const usage: Usage = {
    prompt_tokens: promptTokens,
    completion_tokens: raw.output_tokens,
    total_tokens: promptTokens + raw.output_tokens,
    prompt_tokens_details: details,
  };
  // Thinking is inside output_tokens, as OpenAI's reasoning_tokens are inside completion_tokens.
  const thinking = count(raw.output_tokens_details?.thinking_tokens);
  if (thinking > 0) usage.completion_tokens_details = { reasoning_tokens: thinking };
  return usage;
}

type AnthropicBlock = Record<string, unknown> & { type?: string };

/** Anthropic's content blocks as internal parts; blocks with no counterpart stay whole, for Anthropic clients. */
export function anthropicBlockPart(block: AnthropicBlock): OutputPart | undefined {
  const { type, ...rest } = block;
  const extras = (keys: string[]): { extras?: { anthropic: Record<string, unknown> } } => {
    const other: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(rest)) if (!keys.includes(name)) other[name] = value;
    return Object.keys(other).length > 0 ? { extras: { anthropic: other } } : {};
  };
  if (type === 'text' && typeof block.text === 'string') return { type: 'text', text: block.text, ...extras(['text']) };
  if (type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
    return { type: 'tool_call', id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}), ...extras(['id', 'name', 'input']) };
  }
  if (type === 'thinking' && typeof block.thinking === 'string') {
    const part: OutputPart = { type: 'reasoning', text: block.thinking, ...extras(['thinking', 'signature']) };
    if (typeof block.signature === 'string') part.signature = block.signature;
    return part;
  }
  if (type === 'redacted_thinking' && typeof block.data === 'string') return { type: 'redacted_reasoning', data: block.data, ...extras(['data']) };
  return typeof type === 'string' ? { type: 'opaque', wire: 'anthropic', value: block } : undefined;
}

export function parseAnthropicResponse(body: string): NormalizedCompletion {
  const parsed = JSON.parse(body) as { content?: AnthropicBlock[]; stop_reason?: string | null; stop_sequence?: string | null; usage?: AnthropicUsage };
  if (!Array.isArray(parsed.content)) throw new Error('Anthropic answered without content.');
  const parts = parsed.content.flatMap((block) => anthropicBlockPart(block) ?? []);
  const choice: CompletionChoice = { index: 0, parts, finishReason: anthropicFinishReason(parsed.stop_reason) };
  if (parsed.stop_reason) choice.finishDetail = { wire: 'anthropic', reason: parsed.stop_reason, stopSequence: parsed.stop_sequence ?? null };
  const completion: NormalizedCompletion = { choices: [choice] };
  const usage = anthropicUsage(parsed.usage);
  if (usage) completion.usage = usage;
  return completion;
}
