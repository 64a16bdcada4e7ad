import { describe } from 'vitest';
import { describeKeyGovernance } from './http/governance-behaviour.js';
import { describeAlerts } from './http/alerts-behaviour.js';
import { describeProjects } from './http/project-behaviour.js';

// Key governance (allow-lists, expiry) against the embedded default.
describe('key governance, embedded deployment', () => {
  describeKeyGovernance('embedded');
});

describe('projects, embedded deployment', () => {
  describeProjects('embedded');
});

describe('budget alerts, embedded deployment', () => {
  describeAlerts('embedded');
});
