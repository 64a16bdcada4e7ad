import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Redis and PostgreSQL for the suites that need them: REDIS_URL / DATABASE_URL, else containers, else a loud skip.
    globalSetup: ['test/support/test-services.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Two cores: run files two at a time; servers use random ports and tests their own Redis prefix and schema.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
