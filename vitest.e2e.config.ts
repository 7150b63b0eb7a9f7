import { defineConfig } from 'vitest/config';

/**
 * `npm run test:e2e`: the console in a real browser (test/e2e, docs/console.md), apart from `npm test`.
 * One file at a time in one process: each file starts a Remit process and a Chromium of its own.
 */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.e2e.ts'],
    // The migrated database template the Remit process starts from (test/helpers/test-database.ts).
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-file.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    sequence: { shuffle: false },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
