import { describe } from 'vitest';
import { describeAuthentication } from './http/auth-behaviour.js';
import { describeFallbacks } from './http/fallback-behaviour.js';
import { useGateway } from './http/gateway-context.js';
import { describeMessagesSurface } from './http/messages-behaviour.js';
import { describeOpenAiClient } from './http/openai-client-behaviour.js';
import { describeStreaming } from './http/streaming-behaviour.js';
import { describeValidation } from './http/validation-behaviour.js';

// The HTTP behaviour suite against the embedded default (one process, no Redis or PostgreSQL).
describe('embedded deployment', () => {
  const context = useGateway('embedded');
  describeValidation(context);
  describeAuthentication(context);
  describeStreaming(context);
  describeFallbacks(context);
  describeOpenAiClient(context);
});

// The Anthropic Messages surface, on a deployment of its own with an Anthropic-wire double too.
describeMessagesSurface('embedded');
