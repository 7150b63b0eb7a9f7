import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { takePglite, givePglite } from './pglite-instances.ts';
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
  const instance = await takePglite(fixture.dumpPath!);
  const database = await openDatabase({
    pgliteInstance: instance,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
  });
  return {
    database,
    drop: async () => {
      await database.close();
      await givePglite(instance);
    },
  };
}

/**
 * The run's migrated PGlite database as a data directory on disk, made from the dump once per run (by
 * whichever test file asks first) and copied from then on: a copy takes ~0.2 s, where a process on an
 * empty DATA_DIR spends 10–15 s creating and migrating its database.
 */
async function pgliteTemplateDir(): Promise<string> {
  const dumpPath = inject('pgliteDump');
  const dir = `${dumpPath}.pglite`;
  if (fs.existsSync(dir)) return dir;
  const building = `${dir}.${process.pid}`;
  const database = await openDatabase({
    dataDir: building,
    loadDataDir: new Blob([fs.readFileSync(dumpPath)]),
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
  });
  await database.close();
  try {
    fs.renameSync(building, dir);
  } catch {
    // Another worker made it meanwhile: theirs is the same database.
    fs.rmSync(building, { recursive: true, force: true });
  }
  return dir;
}

/** Puts a copy of the run's migrated database into `dataDir` (PGlite): a process there starts at once. */
export async function copyMigratedDatabaseInto(dataDir: string): Promise<void> {
  fs.cpSync(await pgliteTemplateDir(), path.join(dataDir, 'pglite'), { recursive: true });
}

export interface ProcessDatabase {
  /** DATA_DIR, and DATABASE_URL on PostgreSQL: the environment of a CLI run or a server process. */
  env: Record<string, string>;
  dataDir: string;
  drop(): Promise<void>;
}

/**
 * A migrated database of its own for the CLI and server processes: a new DATA_DIR holding a copy of the
 * run's PGlite database, or on PostgreSQL a database made from the run's template (with a DATA_DIR for
 * what else lives there, such as the embedded object store).
 */
export async function processDatabase(prefix = 'remit-proc-'): Promise<ProcessDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (testDatabaseUrl) {
    const name = `remit_p_${crypto.randomBytes(6).toString('hex')}`;
    await adminQuery(`create database ${name} template ${inject('templateName')}`);
    return {
      env: { DATA_DIR: dataDir, DATABASE_URL: withDatabaseName(testDatabaseUrl, name) },
      dataDir,
      drop: async () => {
        await adminQuery(`drop database if exists ${name} with (force)`);
        removeDir();
      },
    };
  }
  await copyMigratedDatabaseInto(dataDir);
  return { env: { DATA_DIR: dataDir }, dataDir, drop: async () => removeDir() };
}
