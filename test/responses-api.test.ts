import { describe, it } from 'vitest';
import { useGateway } from './http/gateway-context.js';
import { describeResponsesApi } from './http/responses-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// The Responses API in both deployments: embedded (SQLite) and scaled out (2 ingress + 2 worker
// processes, PostgreSQL), where a follow-up request usually reaches the other ingress.

describe('embedded deployment', () => {
  describeResponsesApi(useGateway('embedded'));
});

if (scaledOutAvailable) {
  describe('scaled-out deployment', () => {
    describeResponsesApi(useGateway('scaled'));
  });
} else {
  console.warn(`responses api: ${scaledOutSkipNotice}`);
  describe.skip('scaled-out deployment (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
}
