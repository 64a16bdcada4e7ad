import { describe, it } from 'vitest';
import { describeEmbeddings } from './http/embeddings-behaviour.js';
import { scaledOutAvailable, scaledOutSkipNotice } from './support/scaled-harness.js';

// The embeddings and model-lookup behaviour suite against the embedded default, then against the
// scaled-out deployment as real processes (2 ingress + 2 workers, BullMQ, Redis counters, PostgreSQL).
describe('embeddings, embedded deployment', () => {
  describeEmbeddings('embedded');
});

if (scaledOutAvailable) {
  describe('embeddings, scaled-out deployment (2 ingress + 2 worker processes)', () => {
    describeEmbeddings('scaled');
  });
} else {
  console.warn(`embeddings scaled-out suite: ${scaledOutSkipNotice}`);
  describe.skip('embeddings, scaled-out deployment (REDIS_URL / DATABASE_URL not set)', () => {
    it('needs REDIS_URL and DATABASE_URL', () => undefined);
  });
}
