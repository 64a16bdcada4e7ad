import { describe, it } from 'vitest';
import { describeClamping } from './http/clamp-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// Budgets that clamp, against real processes (2 ingresses, Redis counters, PostgreSQL).
if (!scaledOutAvailable) {
  console.warn(`scaled-out clamping: ${scaledOutSkipNotice}`);
  describe.skip('scaled-out deployment: budgets that clamp (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
} else {
  describe('scaled-out deployment: budgets that clamp max tokens', () => {
    describeClamping('scaled');
  });
}
