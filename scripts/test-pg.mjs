#!/usr/bin/env node
// Runs the test suite against PostgreSQL: TEST_DATABASE_URL if set, else a server on 127.0.0.1:5432
// (user postgres). Each run works in throwaway databases it creates and drops. With --ci, no reachable
// server means "skipped" (exit 0); without it, an error.
import { spawnSync } from 'node:child_process';
import net from 'node:net';
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
// Redis-backed tests run only when a Redis answers (TEST_REDIS_URL, else the local default).
async function redisUrl() {
  const candidate = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const { hostname, port } = new URL(candidate);
  const ok = await new Promise((resolve) => {
    const socket = net.connect(Number(port || 6379), hostname, () => {
      socket.end();
      resolve(true);
    });
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(false));
  });
  if (!ok) console.log(`Redis not reachable at ${hostname}:${port || 6379}: Redis tests are skipped.`);
  return ok ? candidate : undefined;
}
const redis = await redisUrl();
const args = process.argv.slice(2).filter((a) => a !== '--ci');
const testEnv = { ...process.env, TEST_DATABASE_URL: url };
if (redis) testEnv.TEST_REDIS_URL = redis;
else delete testEnv.TEST_REDIS_URL;
const result = spawnSync('npx', ['vitest', 'run', ...args], {
  stdio: 'inherit',
  env: testEnv,
});
process.exit(result.status ?? 1);
