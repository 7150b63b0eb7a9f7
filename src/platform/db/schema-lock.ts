import type { Database } from './client.ts';

/**
 * One advisory lock for everything that changes the schema at start: our migrations (taken as a
 * transaction lock in migrate.ts) and the job queue's own tables and queues (pg-boss creates them on
 * start and on each createQueue). Processes starting together on a fresh PostgreSQL deadlocked in the job
 * queue's set-up without it; with it they take turns.
 */
export const SCHEMA_LOCK_KEY = 727274;

/**
 * Runs `work` while holding the schema lock on a connection of its own (PostgreSQL). The embedded
 * database has one process by construction (the data-directory lock), so there it just runs. Never call
 * migrate() inside: it takes the same lock on another connection and would wait for this one.
 */
export async function withSchemaLock<T>(database: Database, work: () => Promise<T>): Promise<T> {
  if (!database.pool) return work();
  const client = await database.pool.connect();
  try {
    // No statement timeout while waiting: another process's set-up may take longer than normal traffic.
    await client.query('set statement_timeout = 0');
    await client.query('select pg_advisory_lock($1)', [SCHEMA_LOCK_KEY]);
    try {
      return await work();
    } finally {
      await client.query('select pg_advisory_unlock($1)', [SCHEMA_LOCK_KEY]);
    }
  } finally {
    await client.query('reset statement_timeout').catch(() => undefined);
    client.release();
  }
}
