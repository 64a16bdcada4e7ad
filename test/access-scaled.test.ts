import { describe, it } from 'vitest';
import { describeAccess } from './http/access-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// Users, roles, per-user admin tokens and the audit log against the scaled-out deployment (2
// ingress + 2 workers, PostgreSQL): requests alternate between ingresses, so a role change or a
// removal made through one ingress is checked on the other.
if (scaledOutAvailable) {
  describe('users, roles and the audit log, scaled-out deployment (2 ingress + 2 worker processes)', () => {
    describeAccess('scaled');
  });
} else {
  console.warn(`access scaled-out suite: ${scaledOutSkipNotice}`);
  describe.skip('users, roles and the audit log, scaled-out deployment (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
}
