import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/platform/db/client.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { adminQuery, testDatabaseUrl, withDatabaseName } from '../helpers/test-database.ts';

/** Migrations run with their own timeouts, not those of normal traffic (issue 15, operations). */
function migrationsDir(statements: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-migrations-'));
  fs.mkdirSync(path.join(dir, 'meta'));
  fs.writeFileSync(
    path.join(dir, 'meta/_journal.json'),
    JSON.stringify({ entries: [{ idx: 0, tag: '0000_test' }] }),
  );
  fs.writeFileSync(path.join(dir, '0000_test.sql'), statements.join('\n--> statement-breakpoint\n'));
  return dir;
}

describe('migration timeouts', () => {
  let database: Database;
  let name: string | undefined;
  beforeAll(async () => {
    if (testDatabaseUrl) {
      name = `remit_mig_${crypto.randomBytes(6).toString('hex')}`;
      await adminQuery(`create database ${name}`);
    }
    // A statement timeout far below what the migration takes, as a server configured for fast traffic.
    database = await openDatabase({
      databaseUrl: name ? withDatabaseName(testDatabaseUrl!, name) : undefined,
      statementTimeoutMs: 100,
    });
  });
  afterAll(async () => {
    await database?.close();
    if (name) await adminQuery(`drop database if exists ${name} with (force)`);
  });

  it('run without the statement timeout and with a 10 s lock timeout', async () => {
    const dir = migrationsDir([
      `do $$ begin
         if current_setting('statement_timeout') <> '0' then raise exception 'statement_timeout is %', current_setting('statement_timeout'); end if;
         if current_setting('lock_timeout') <> '10s' then raise exception 'lock_timeout is %', current_setting('lock_timeout'); end if;
       end $$`,
      // Longer than the 100 ms traffic timeout (PostgreSQL enforces it; PGlite does not).
      `select pg_sleep(0.3)`,
      `create table migrated_slowly (id int)`,
    ]);
    expect(await migrate(database, dir)).toEqual(['0000_test']);
    // The settings were local to the migration's transaction: traffic keeps its own timeout.
    const rows = (await database.db.execute('show statement_timeout')) as unknown as {
      rows: { statement_timeout: string }[];
    };
    expect(rows.rows[0]!.statement_timeout).toBe('100ms');
  });
});
