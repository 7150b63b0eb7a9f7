import { defineConfig } from 'vitest/config';

/**
 * Test files share their worker processes (`isolate: false`): the modules of the app are loaded once
 * per worker instead of once per file (about 2 s a file), so a file must leave the process as it found
 * it: close what it opened, restore what it changed (test/setup-file.ts restores the clock, spies and
 * the environment). A file that cannot — one that installs something process-wide for good, such as a
 * global tracer or patched modules — is named `*.isolated.test.ts` and gets a process of its own.
 */
const ISOLATED = ['src/**/*.isolated.test.ts', 'test/**/*.isolated.test.ts'];
/** The browser tests run on their own (`npm run test:e2e`, vitest.e2e.config.ts), never in `npm test`. */
const E2E = ['test/e2e/**'];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-file.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: [
            'src/**/*.test.ts',
            'test/**/*.test.ts',
            'packages/*/test/**/*.test.ts',
            // The console's pure logic (web/src); its pages are tested in a browser by `npm run test:e2e`.
            'web/src/**/*.test.ts',
          ],
          exclude: [...ISOLATED, ...E2E],
          isolate: false,
        },
      },
      { extends: true, test: { name: 'isolated', include: ISOLATED, isolate: true } },
    ],
  },
});
