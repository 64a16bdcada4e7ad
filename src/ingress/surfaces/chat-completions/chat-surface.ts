import { GatewayError } from '../../../shared/errors.js';
import type { RenderedError, Surface } from '../../pipeline/surface.js';
import { parseChatRequest } from './chat-request-schema.js';
import { chatToInternal } from './chat-to-internal.js';
import { ChunkFormatter, completionBody, doneFrame } from './chat-render.js';

// POST /v1/chat/completions: OpenAI's Chat Completions API.

export function renderChatError(error: GatewayError): RenderedError {
  const headers: Array<[string, string]> = [];
  if (error.retryAfterSeconds !== undefined) headers.push(['retry-after', String(Math.max(1, Math.ceil(error.retryAfterSeconds)))]);
  if (error.headers) headers.push(...error.headers);
  return { status: error.status, body: JSON.stringify(error.toBody()), headers };
}

export const chatCompletionsSurface: Surface = {
  name: 'chat.completions',
  headerNames: ['authorization'],
  parse: (body) => chatToInternal(parseChatRequest(body)),
  renderError: renderChatError,
  renderCompletion(context, event) {
    return completionBody(`chatcmpl-${context.jobId}`, context.created, event.model, event.choices, event.usage, event.systemFingerprint);
  },
  createStream(context) {
    const id = `chatcmpl-${context.jobId}`;
    const includeUsage = context.request.includeUsage === true;
    let formatter: ChunkFormatter | undefined;
    let model = context.request.model;
    const formatterFor = (served: string) => {
      model = served;
      formatter ??= new ChunkFormatter(id, context.created, served, includeUsage);
      return formatter;
    };
    return {
      start: (served) => formatterFor(served).roleChunks(context.request.n),
      deltas: (deltas) => formatter?.deltas(deltas) ?? '',
      finish: (served, usage) => formatterFor(served).usageChunk(served, usage) + doneFrame,
      error: (error) => formatterFor(model).errorChunk(model, error),
    };
  },
};
