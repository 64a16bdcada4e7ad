import { describe } from 'vitest';
import { describeClamping } from './http/clamp-behaviour.js';

// Budgets that clamp, against the embedded default.
describe('embedded deployment: budgets that clamp max tokens', () => {
  describeClamping('embedded');
});
