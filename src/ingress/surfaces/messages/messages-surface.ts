import type { Surface } from '../../pipeline/surface.js';
import { renderMessagesError, anthropicErrorType } from './messages-errors.js';
import { MessageStreamRenderer, messageBody } from './messages-render.js';
import { parseMessagesRequest } from './messages-schema.js';
import { messagesToInternal } from './messages-to-internal.js';

// POST /v1/messages: Anthropic's Messages API. The answer names the model as the client did (an
// alias stays an alias); which catalog model served it is in the ledger.

export const messagesSurface: Surface = {
  name: 'messages',
  headerNames: ['authorization', 'x-api-key', 'anthropic-version', 'anthropic-beta'],
  parse: (body, headers) => messagesToInternal(parseMessagesRequest(body), headers),
  renderError: renderMessagesError,
  renderCompletion(context, event) {
    return messageBody(`msg_${context.jobId}`, context.request.model, event.choices[0], event.usage);
  },
  createStream(context) {
    const renderer = new MessageStreamRenderer(`msg_${context.jobId}`, context.request.model);
    return {
      start: () => renderer.start(),
      deltas: (deltas) => renderer.deltas(deltas),
      finish: (_model, usage) => renderer.finish(usage),
      error: (error) => renderer.error(anthropicErrorType(error).type, error.message),
    };
  },
  requestIdHeader: (requestId) => ['request-id', `req_${requestId}`],
};
