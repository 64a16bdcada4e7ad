import { describe, it } from 'vitest';
import { useGateway } from './http/gateway-context.js';
import { describeBackgroundResponses } from './http/responses-background-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// Background responses and resumable streams in both deployments: embedded (memory replay log,
// SQLite) and scaled out (2 ingress + 2 worker processes, Redis replay log, PostgreSQL), where
// consecutive requests alternate between the ingress processes.

describe('embedded deployment', () => {
  describeBackgroundResponses(useGateway('embedded'));
});

if (scaledOutAvailable) {
  describe('scaled-out deployment', () => {
    describeBackgroundResponses(useGateway('scaled'));
  });
} else {
  console.warn(`responses background: ${scaledOutSkipNotice}`);
  describe.skip('scaled-out deployment (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
}
