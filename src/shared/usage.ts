export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** True when a tokenizer counted the tokens because the provider reported none. */
  estimated?: boolean;
  prompt_tokens_details?: Record<string, unknown>;
  completion_tokens_details?: Record<string, unknown>;
}

export function makeUsage(promptTokens: number, completionTokens: number, estimated = false): Usage {
  const usage: Usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  if (estimated) usage.estimated = true;
  return usage;
}
