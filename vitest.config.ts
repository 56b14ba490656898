import { defineConfig } from 'vitest/config';

// Unit tests are pure and fast; integration tests talk to the real Postgres and Redis that
// `.ci/run` guarantees, each file with its own database and BullMQ prefix (STYLE §10).
export default defineConfig({
  test: {
    env: { TZ: 'UTC' },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.int.test.ts', 'test/faults/**'],
          env: { TZ: 'UTC' },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          exclude: ['test/faults/**'],
          env: { TZ: 'UTC' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});
