import type { ChatAdapter } from '../chat-adapter.js';
import { parseGeminiError } from './gemini-errors.js';
import { buildGeminiRequest } from './gemini-request.js';
import { parseGeminiResponse } from './gemini-response.js';
import { GeminiStreamTranslator } from './gemini-stream-translator.js';

// The Gemini API (generateContent / streamGenerateContent?alt=sse). `n` becomes candidateCount,
// so one call yields every choice.
export const geminiAdapter: ChatAdapter = {
  supportsMultipleChoices: true,
  buildRequest: buildGeminiRequest,
  parseResponse: (body) => parseGeminiResponse(body),
  createStreamTranslator: () => new GeminiStreamTranslator(),
  parseError: parseGeminiError,
};
