import { describe } from 'vitest';
import { describeBudgetPeriods, describeBudgets } from './http/budget-behaviour.js';
import { useGateway } from './http/gateway-context.js';

// Budgets, rate limits, billing and the usage API against the embedded default (one process,
// in-memory counters, the embedded database file). The gateway runs in this process, so the
// budget-period tests can move its clock.
describe('embedded deployment: budgets, rate limits and usage', () => {
  const context = useGateway('embedded');
  describeBudgets(context);
  describeBudgetPeriods(context);
});
