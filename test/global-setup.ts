import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/platform/db/client.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { Jobs } from '../src/platform/jobs/jobs.ts';
import { ROOT } from './helpers/processes.ts';
import { openRouteRecords } from './helpers/route-records.ts';
import { prepareTestBundle } from './helpers/test-bundle.ts';
import {
  adminQuery,
  testDatabaseUrl,
  withDatabaseName,
  STATEMENT_TIMEOUT_MS,
} from './helpers/test-database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteDump: string;
    templateName: string;
    /** The bundle the run's processes start (test/helpers/test-bundle.ts). */
    bundleDir: string;
  }
}

/** Everything the migrated database is made of: the migrations, the code that runs them, the engines. */
function templateInputsHash(): string {
  const hash = crypto.createHash('sha256');
  const add = (file: string) => hash.update(file).update(fs.readFileSync(path.join(ROOT, file)));
  const addDir = (dir: string) => {
    for (const entry of fs
      .readdirSync(path.join(ROOT, dir), { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) addDir(file);
      else add(file);
    }
  };
  addDir('migrations');
  addDir('src/platform/db');
  addDir('src/platform/jobs');
  add('test/global-setup.ts');
  add('node_modules/@electric-sql/pglite/package.json');
  add('node_modules/pg-boss/package.json');
  return hash.digest('hex').slice(0, 16);
}

/**
 * Removes templates of other inputs that no run has used for two days (every run touches its own, and
 * other checkouts on this machine may still use theirs).
 */
function removeOldTemplates(keep: string): void {
  const twoDaysAgo = Date.now() - 2 * 86_400_000;
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (!name.startsWith(TEMPLATE_PREFIX) || name.startsWith(keep)) continue;
    // A template's files (the dump, its data-directory copy) go with the dump's last use.
    const file = path.join(os.tmpdir(), name);
    const dump = path.join(os.tmpdir(), `${name.slice(0, keep.length)}.tar`);
    try {
      const lastUse = fs.statSync(fs.existsSync(dump) ? dump : file).mtimeMs;
      if (lastUse < twoDaysAgo) fs.rmSync(file, { recursive: true, force: true });
    } catch {
      // Removed meanwhile by another run.
    }
  }
}

const TEMPLATE_PREFIX = 'remit-test-template-';

/**
 * Migrates one database for the whole run (our migrations and pg-boss's schema): a PGlite dump that
 * every test file loads (≈0.5 s instead of 2–4 s of initdb), or a PostgreSQL template database. The
 * PGlite dump is kept in the temporary directory under a hash of what it is made of, so the next run
 * with the same migrations starts from it at once (a changed migration or engine makes a new one).
 */
export default async function setup(project: TestProject) {
  // What the apps answer during the run, checked when it ends (test/helpers/route-records.ts).
  const closeRouteRecords = openRouteRecords((dir) => project.provide('routeRecordsDir', dir));
  project.provide('bundleDir', await prepareTestBundle());
  const teardown = await prepareDatabase(project);
  return async () => {
    try {
      await teardown?.();
    } finally {
      await closeRouteRecords();
    }
  };
}

async function prepareDatabase(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (testDatabaseUrl) {
    const templateName = `remit_tpl_${crypto.randomBytes(6).toString('hex')}`;
    await adminQuery(`create database ${templateName}`);
    const database = await openDatabase({
      databaseUrl: withDatabaseName(testDatabaseUrl, templateName),
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    });
    await migrate(database);
    const jobs = await Jobs.start(database, { supervise: false });
    await jobs.stop();
    await database.close();
    project.provide('templateName', templateName);
    project.provide('pgliteDump', '');
    return async () => {
      await adminQuery(`drop database if exists ${templateName} with (force)`);
    };
  }
  const stem = `${TEMPLATE_PREFIX}${templateInputsHash()}`;
  const dumpPath = path.join(os.tmpdir(), `${stem}.tar`);
  removeOldTemplates(stem);
  if (!fs.existsSync(dumpPath)) {
    const database = await openDatabase({ statementTimeoutMs: STATEMENT_TIMEOUT_MS });
    await migrate(database);
    const jobs = await Jobs.start(database, { supervise: false });
    await jobs.stop();
    const dump = await database.pglite!.dumpDataDir('none');
    await database.close();
    // Written under another name and renamed: a run beside this one never reads half a dump.
    const partial = `${dumpPath}.${process.pid}`;
    fs.writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
    fs.renameSync(partial, dumpPath);
  } else {
    const now = new Date();
    fs.utimesSync(dumpPath, now, now);
  }
  project.provide('pgliteDump', dumpPath);
  project.provide('templateName', '');
  return undefined;
}
