import crypto from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/platform/db/client.ts';

/**
 * Which engine the suite runs on: PGlite (default) or the PostgreSQL server at TEST_DATABASE_URL.
 * Either way every test file gets a database of its own, already migrated (a PGlite dump loaded, or a
 * PostgreSQL database copied from a migrated template).
 */
export const testDatabaseUrl = process.env.TEST_DATABASE_URL || undefined;
export const engine = testDatabaseUrl ? 'postgres' : 'pglite';
export const STATEMENT_TIMEOUT_MS = 10_000;

export function withDatabaseName(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  database: Database;
  /** The connection string of this file's own PostgreSQL database (postgres engine only). */
  url?: string;
  drop(): Promise<void>;
}

export async function openTestDatabase(fixture: {
  dumpPath?: string;
  templateName?: string;
}): Promise<TestDatabase> {
  if (testDatabaseUrl) {
    const name = `remit_t_${crypto.randomBytes(6).toString('hex')}`;
    await adminQuery(`create database ${name} template ${fixture.templateName}`);
    const url = withDatabaseName(testDatabaseUrl, name);
    const database = await openDatabase({
      databaseUrl: url,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
      poolSize: 5,
    });
    return {
      database,
      url,
      drop: async () => {
        await database.close();
        await adminQuery(`drop database if exists ${name} with (force)`);
      },
    };
  }
  const dump = new Blob([fs.readFileSync(fixture.dumpPath!)]);
  const database = await openDatabase({ loadDataDir: dump, statementTimeoutMs: STATEMENT_TIMEOUT_MS });
  return { database, drop: () => database.close() };
}
