import type { Usage } from '../../usage.js';

export function readOpenAiUsage(value: unknown): Usage | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const usage = value as Record<string, unknown>;
  if (typeof usage.prompt_tokens !== 'number' || typeof usage.completion_tokens !== 'number') return undefined;
  const result: Usage = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : usage.prompt_tokens + usage.completion_tokens,
  };
  if (usage.prompt_tokens_details && typeof usage.prompt_tokens_details === 'object') result.prompt_tokens_details = usage.prompt_tokens_details as Record<string, unknown>;
  if (usage.completion_tokens_details && typeof usage.completion_tokens_details === 'object') result.completion_tokens_details = usage.completion_tokens_details as Record<string, unknown>;
  return result;
}
