import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/processes.ts';
import { adminQuery, engine, testDatabaseUrl, withDatabaseName } from '../helpers/test-database.ts';

/**
 * Three server processes started at the same moment on an empty PostgreSQL database: migrations and the
 * job queue's set-up take turns under one advisory lock, so every process becomes ready (without it, the
 * job queue's schema creation deadlocked in most rounds). Real processes, ten rounds.
 */
const ROUNDS = 10;

describe.skipIf(engine !== 'postgres')('processes starting together on a fresh database', () => {
  it(`all three become ready, ${ROUNDS} rounds out of ${ROUNDS}`, async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const name = `remit_start_${crypto.randomBytes(5).toString('hex')}`;
      await adminQuery(`create database ${name}`);
      const url = withDatabaseName(testDatabaseUrl!, name);
      const settled = await Promise.allSettled([0, 1, 2].map(() => startServer({ DATABASE_URL: url })));
      outcomes.push(
        settled.map((s) => (s.status === 'fulfilled' ? 'ready' : `failed: ${String(s.reason)}`)).join(' | '),
      );
      await Promise.all(
        settled
          .filter((s): s is PromiseFulfilledResult<ServerProcess> => s.status === 'fulfilled')
          .map(async ({ value }) => {
            value.child.kill('SIGTERM');
            await value.exited;
          }),
      );
      await adminQuery(`drop database if exists ${name} with (force)`);
    }
    expect(outcomes).toEqual(Array.from({ length: ROUNDS }, () => 'ready | ready | ready'));
  }, 240_000);
});
