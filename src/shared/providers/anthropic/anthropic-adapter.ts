import type { ChatAdapter } from '../chat-adapter.js';
import { parseAnthropicError } from './anthropic-errors.js';
import { buildAnthropicRequest } from './anthropic-request.js';
import { parseAnthropicResponse } from './anthropic-response.js';
import { AnthropicStreamTranslator } from './anthropic-stream-translator.js';

// The Anthropic Messages API (POST {baseUrl}/messages). It has no `n`: one call yields one message,
// which supportsMultipleChoices tells the worker.
export const anthropicAdapter: ChatAdapter = {
  supportsMultipleChoices: false,
  buildRequest: buildAnthropicRequest,
  parseResponse: (body) => parseAnthropicResponse(body),
  createStreamTranslator: () => new AnthropicStreamTranslator(),
  parseError: parseAnthropicError,
};
