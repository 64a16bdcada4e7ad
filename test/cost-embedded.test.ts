import { describe } from 'vitest';
import { describeCost } from './http/cost-behaviour.js';

// Cache-aware prices and usage.cost against the embedded default.
describe('embedded deployment: cache-aware cost on every surface', () => {
  describeCost('embedded');
});
