import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createPglite, openDatabase, rawQuery, type Database } from '../../src/platform/db/client.ts';
import { runWithRole, TENANT_ROLE } from '../../src/platform/db/session-role.ts';

const root = path.resolve(import.meta.dirname, '..', '..');
const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-pglite-durability-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** WAL written since the last checkpoint began: what a start after a crash replays. */
async function walSinceCheckpoint(database: Database): Promise<number> {
  const [row] = await rawQuery<{ bytes: number }>(
    database.db,
    `select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::bigint as bytes from pg_control_checkpoint()`,
  );
  return Number(row!.bytes);
}

// PGlite is one backend with no checkpointer beside it (docs/performance.md#start-and-footprint).
describe('the embedded database after a crash', () => {
  it('PGLITE_MAX_WAL_MB, PGLITE_CHECKPOINT_INTERVAL_S and PGLITE_OPTIMIZED_CODE: defaults and checks', () => {
    const config = loadConfig({});
    expect(config.pgliteMaxWalMb).toBe(64);
    expect(config.pgliteCheckpointIntervalS).toBe(60);
    expect(config.pgliteOptimizedCode).toBe(false);
    const set = loadConfig({
      PGLITE_MAX_WAL_MB: '128',
      PGLITE_CHECKPOINT_INTERVAL_S: '0',
      PGLITE_OPTIMIZED_CODE: 'true',
    });
    expect([set.pgliteMaxWalMb, set.pgliteCheckpointIntervalS, set.pgliteOptimizedCode]).toEqual([
      128,
      0,
      true,
    ]);
    // PostgreSQL's own minimum is two 16 MB segments.
    expect(() => loadConfig({ PGLITE_MAX_WAL_MB: '16' })).toThrow(ConfigError);
    expect(() => loadConfig({ PGLITE_CHECKPOINT_INTERVAL_S: '-1' })).toThrow(ConfigError);
    expect(() => loadConfig({ PGLITE_OPTIMIZED_CODE: 'fast' })).toThrow(ConfigError);
  });

  it('looks every few seconds on its own, and checkpoints once the interval has passed', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'Date'] });
    const database = await openDatabase({
      statementTimeoutMs: 10_000,
      dataDir: path.join(tempDir(), 'pglite'),
      pgliteCheckpointIntervalMs: 60_000,
    });
    try {
      await rawQuery(database.db, 'create table filler (body text)');
      await rawQuery(database.db, `insert into filler select repeat('x', 500) from generate_series(1, 2000)`);
      const written = await walSinceCheckpoint(database);
      expect(written).toBeGreaterThan(1_000_000);
      // A look before the interval: written, but not yet due (and far below the WAL bound).
      await vi.advanceTimersByTimeAsync(5_000);
      await vi.waitFor(async () =>
        expect(await walSinceCheckpoint(database)).toBeGreaterThanOrEqual(written),
      );
      await vi.advanceTimersByTimeAsync(55_000);
      await vi.waitFor(async () => expect(await walSinceCheckpoint(database)).toBeLessThan(10_000), {
        timeout: 10_000,
      });
    } finally {
      vi.useRealTimers();
      await database.close();
    }
  });

  it('checkpoints when something was written, as the login role whatever role the session last had', async () => {
    const database = await openDatabase({
      statementTimeoutMs: 10_000,
      dataDir: path.join(tempDir(), 'pglite'),
      pgliteCheckpointIntervalMs: 0, // looks only when asked here
    });
    try {
      await rawQuery(database.db, 'create table filler (body text)');
      await rawQuery(database.db, `insert into filler select repeat('x', 500) from generate_series(1, 2000)`);
      expect(await walSinceCheckpoint(database)).toBeGreaterThan(1_000_000);
      // The session's last statement ran as the tenant role (as migrations create it), which may not
      // CHECKPOINT.
      await rawQuery(database.db, `create role ${TENANT_ROLE} nologin`);
      await runWithRole({ role: { kind: 'tenant', organizationUids: [] } }, () =>
        rawQuery(database.db, 'select 1'),
      );
      const checkpoints = database.checkpoints!;
      expect(await checkpoints.runOnce()).toBe(true);
      expect(await walSinceCheckpoint(database)).toBeLessThan(10_000);
      // Nothing written since: no checkpoint.
      expect(await checkpoints.runOnce()).toBe(false);
      await rawQuery(database.db, `insert into filler values ('one more')`);
      expect(await checkpoints.runOnce()).toBe(true);
    } finally {
      await database.close();
    }
  });

  it('a burst of writes killed with SIGKILL leaves at most max_wal_size to replay, and nothing is lost', async () => {
    const dataDir = path.join(tempDir(), 'pglite');
    // A real process writes ≈ 50 MB of WAL (≈ 10 MB a batch), then is killed. Its hourly interval never
    // comes: only the WAL bound checkpoints.
    const script = `
      import { openDatabase, rawQuery } from './src/platform/db/client.ts';
      const database = await openDatabase({ statementTimeoutMs: 0, dataDir: ${JSON.stringify(dataDir)}, pgliteMaxWalMb: 32, pgliteCheckpointIntervalMs: 3_600_000 });
      await rawQuery(database.db, 'create table filler (n int, body text)');
      for (let i = 0; i < 5; i += 1) {
        await rawQuery(database.db, "insert into filler select n, repeat(md5(n::text), 30) from generate_series(" + (i * 10000 + 1) + ", " + (i + 1) * 10000 + ") n");
        // What the process's timer does every few seconds, here after every batch.
        await database.checkpoints.runOnce();
      }
      const [row] = await rawQuery(database.db, "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::bigint as bytes, pg_current_wal_insert_lsn()::text as lsn from pg_control_checkpoint()");
      console.log(JSON.stringify({ since_checkpoint: Number(row.bytes), lsn: row.lsn }));
      setInterval(() => undefined, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    const written = await new Promise<{ since_checkpoint: number }>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const line = output.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve(JSON.parse(line) as { since_checkpoint: number });
      });
      child.on('exit', (code) => reject(new Error(`writer exited (${code}) before it wrote: ${errors}`)));
    });
    child.kill('SIGKILL');
    await once(child, 'exit').catch(() => undefined);

    // Without the bound, all ≈ 50 MB since the start were left to replay.
    expect(written.since_checkpoint).toBeLessThan(32 * 2 ** 20);
    const database = await openDatabase({
      statementTimeoutMs: 10_000,
      dataDir,
      pgliteCheckpointIntervalMs: 0,
    });
    try {
      const [row] = await rawQuery<{ rows: number }>(database.db, 'select count(*)::int as rows from filler');
      expect(row!.rows).toBe(50_000);
    } finally {
      await database.close();
    }
  }, 120_000);

  it('a data directory created with pgcrypto installed (an earlier first migration) still opens', async () => {
    const dataDir = path.join(tempDir(), 'pglite');
    const [{ PGlite }, { pgcrypto }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('@electric-sql/pglite/contrib/pgcrypto'),
    ]);
    const before = await PGlite.create({ dataDir, extensions: { pgcrypto } });
    await before.exec('create extension pgcrypto; create table kept (uid uuid default gen_random_uuid())');
    await before.exec('insert into kept default values');
    await before.close();

    const lite = await createPglite({ dataDir });
    try {
      const kept = await lite.query<{ n: number }>('select count(*)::int as n from kept');
      expect(kept.rows[0]!.n).toBe(1);
      await lite.exec('insert into kept default values');
      const ext = await lite.query<{ extname: string }>('select extname from pg_extension');
      expect(ext.rows.map((e) => e.extname)).toContain('pgcrypto');
    } finally {
      await lite.close();
    }
  });
});
