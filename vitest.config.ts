import { defineConfig } from 'vitest/config';

// The fault suite runs for minutes and loads the machine, and the browser tests need Debian's
// chromium: each runs only when asked for by name (`npm run test:faults`, `npm run
// test:browser`), never as part of a plain `vitest run` (`npm test`).
const asked = (name: string) =>
  process.argv.some(
    (arg, i, all) => arg === `--project=${name}` || (arg === '--project' && all[i + 1] === name),
  );

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
          exclude: ['test/**/*.int.test.ts', 'test/faults/**', 'test/browser/**'],
          env: { TZ: 'UTC' },
          // Pure code with no module state between files: one module graph per worker instead
          // of one per file (the imports were a third of the unit project's time).
          isolate: false,
          // A timeout catches a hang, not a slow machine: the property tests of the gzip and
          // brotli decoders took 5.3–9.8 s on a host that lent this one a fifth of a core
          // (vitest's default is 5 s). Speed is the bench's to judge.
          testTimeout: 60_000,
          setupFiles: ['test/support/fast-check.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          exclude: ['test/faults/**'],
          env: { TZ: 'UTC' },
          // Integration files mostly wait (on Postgres, Redis, child processes, sinks), and each
          // has its own database and queue prefix: three at once on two cores instead of
          // vitest's default of one (cores - 1).
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      ...(asked('faults')
        ? [
            {
              // Real worker processes under injected faults (docs/RELIABILITY.md), two files at
              // a time: they mostly wait (on kills, back-offs, stalled-job locks), so two take
              // half the time of one after another (4.4 against 8.2 minutes here) and every
              // storm runs beside another's load.
              test: {
                name: 'faults',
                include: ['test/faults/**/*.test.ts'],
                env: { TZ: 'UTC' },
                testTimeout: 240_000,
                hookTimeout: 60_000,
                maxWorkers: 2,
                sequence: { groupOrder: 2 },
                globalSetup: ['test/support/global-setup.ts'],
              },
            },
          ]
        : []),
      ...(asked('browser')
        ? [
            {
              // The pages people open, in a real browser (test/browser/pages.browser.test.ts).
              test: {
                name: 'browser',
                include: ['test/browser/**/*.browser.test.ts'],
                env: { TZ: 'UTC' },
                testTimeout: 60_000,
                hookTimeout: 60_000,
                sequence: { groupOrder: 3 },
                globalSetup: ['test/support/global-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});
