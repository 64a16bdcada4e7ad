import { describe, it } from 'vitest';
import { describeAuthentication } from './http/auth-behaviour.js';
import { describeFallbacks } from './http/fallback-behaviour.js';
import { useGateway } from './http/gateway-context.js';
import { describeMessagesSurface } from './http/messages-behaviour.js';
import { describeOpenAiClient } from './http/openai-client-behaviour.js';
import { describeStreaming } from './http/streaming-behaviour.js';
import { describeValidation } from './http/validation-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// The same HTTP behaviour suite as test/embedded.test.ts, against the scaled-out deployment run as
// real processes (two ingress, two worker; BullMQ + Redis pub/sub, Redis counters, PostgreSQL),
// with requests alternating between the two ingress ports.
if (scaledOutAvailable) {
  describe('scaled-out deployment (2 ingress + 2 worker processes)', () => {
    const context = useGateway('scaled');
    describeValidation(context);
    describeAuthentication(context);
    describeStreaming(context);
    describeFallbacks(context);
    describeOpenAiClient(context);
  });
  describeMessagesSurface('scaled');
} else {
  console.warn(`scaled-out suite: ${scaledOutSkipNotice}`);
  describe.skip('scaled-out deployment (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
}
