#!/usr/bin/env node
// A longer run of the generated hostile-input test (docs/fuzzing.md): FUZZ_RUNS random requests per
// operation (default 500) from FUZZ_SEED (default: a new one, printed so a failure can be repeated).
import { spawnSync } from 'node:child_process';

const env = {
  ...process.env,
  FUZZ_RUNS: process.env.FUZZ_RUNS || '500',
  FUZZ_SEED: process.env.FUZZ_SEED || String(Math.floor(Math.random() * 1e9)),
};
console.log(`FUZZ_SEED=${env.FUZZ_SEED} FUZZ_RUNS=${env.FUZZ_RUNS}`);
const result = spawnSync('npx', ['vitest', 'run', 'test/platform/hostile-input.test.ts'], {
  stdio: 'inherit',
  env,
});
process.exit(result.status ?? 1);
