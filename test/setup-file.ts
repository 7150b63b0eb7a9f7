import { afterAll, beforeAll, vi } from 'vitest';

/**
 * Runs around every test file. Most files share a worker process with the files before them
 * (vitest.config.ts, `isolate: false`), so whatever a file changes for the whole process is put back
 * when it ends: the real clock, spied-on functions, the environment.
 */
let environment: NodeJS.ProcessEnv;
beforeAll(() => {
  environment = { ...process.env };
});
afterAll(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  for (const name of Object.keys(process.env)) if (!(name in environment)) delete process.env[name];
  Object.assign(process.env, environment);
});
