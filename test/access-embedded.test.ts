import { describe } from 'vitest';
import { describeAccess } from './http/access-behaviour.js';

// Users, roles, per-user admin tokens and the audit log against the embedded default.
describe('users, roles and the audit log, embedded deployment', () => {
  describeAccess('embedded');
});
