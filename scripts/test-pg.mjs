#!/usr/bin/env node
// Runs the test suite against PostgreSQL: TEST_DATABASE_URL if set, else a server on 127.0.0.1:5432
// (user postgres). Each run works in throwaway databases it creates and drops. With --ci, no reachable
// server means "skipped" (exit 0); without it, an error.
import { spawnSync } from 'node:child_process';
import pg from 'pg';

const ci = process.argv.includes('--ci');
const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

async function reachable() {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch (error) {
    console.error(`PostgreSQL not reachable at ${url.replace(/:[^:@/]+@/, ':***@')}: ${error.message}`);
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

if (!(await reachable())) {
  if (ci) {
    console.log('PostgreSQL run skipped: no server reachable.');
    process.exit(0);
  }
  process.exit(1);
}
const redis = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const args = process.argv.slice(2).filter((a) => a !== '--ci');
const result = spawnSync('npx', ['vitest', 'run', ...args], {
  stdio: 'inherit',
  env: { ...process.env, TEST_DATABASE_URL: url, TEST_REDIS_URL: redis },
});
process.exit(result.status ?? 1);
