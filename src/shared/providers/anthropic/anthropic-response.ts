import type { Usage } from '../../usage.js';
import type { CompletionChoice, FinishReason, NormalizedCompletion } from '../provider-adapter.js';

// Anthropic Messages response -> OpenAI-shaped completion.

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
  const promptTokens = raw.input_tokens + count(raw.cache_creation_input_tokens) + cacheRead;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: raw.output_tokens,
    total_tokens: promptTokens + raw.output_tokens,
    prompt_tokens_details: { cached_tokens: cacheRead },
  };
}

interface AnthropicContentBlock {
  type?: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
}

export function parseAnthropicResponse(body: string): NormalizedCompletion {
  const parsed = JSON.parse(body) as { content?: AnthropicContentBlock[]; stop_reason?: string | null; usage?: AnthropicUsage };
  if (!Array.isArray(parsed.content)) throw new Error('Anthropic answered without content.');
  let text: string | null = null;
  const toolCalls: NonNullable<CompletionChoice['message']['tool_calls']> = [];
  // Thinking and server-tool blocks have no Chat Completions counterpart and are left out.
  for (const block of parsed.content) {
    if (block.type === 'text' && typeof block.text === 'string') text = (text ?? '') + block.text;
    else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const choice: CompletionChoice = {
    index: 0,
    message: { role: 'assistant', content: text },
    finish_reason: anthropicFinishReason(parsed.stop_reason),
  };
  if (toolCalls.length > 0) choice.message.tool_calls = toolCalls;
  const completion: NormalizedCompletion = { choices: [choice] };
  const usage = anthropicUsage(parsed.usage);
  if (usage) completion.usage = usage;
  return completion;
}
