import { describe, it } from 'vitest';
import { describeCost } from './http/cost-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// Cache-aware prices and usage.cost against real processes, Redis and PostgreSQL.
if (!scaledOutAvailable) {
  console.warn(`scaled-out cost: ${scaledOutSkipNotice}`);
  describe.skip('scaled-out deployment: cache-aware cost (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
} else {
  describe('scaled-out deployment: cache-aware cost on every surface', () => {
    describeCost('scaled');
  });
}
