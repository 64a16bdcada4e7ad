import { describe, it } from 'vitest';
import { describeKeyGovernance } from './http/governance-behaviour.js';
import { describeAlerts } from './http/alerts-behaviour.js';
import { describeProjects } from './http/project-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// Key governance (allow-lists, expiry) against the scaled-out deployment as real processes
// (2 ingress + 2 workers, BullMQ, Redis counters, PostgreSQL); requests alternate between ingresses.
if (scaledOutAvailable) {
  describe('key governance, scaled-out deployment (2 ingress + 2 worker processes)', () => {
    describeKeyGovernance('scaled');
  });
  describe('projects, scaled-out deployment (2 ingress + 2 worker processes)', () => {
    describeProjects('scaled');
  });
  describe('budget alerts, scaled-out deployment (2 ingress + 2 worker processes)', () => {
    describeAlerts('scaled');
  });
} else {
  console.warn(`governance scaled-out suite: ${scaledOutSkipNotice}`);
  describe.skip('key governance, scaled-out deployment (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
}
