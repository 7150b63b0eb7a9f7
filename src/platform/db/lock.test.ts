import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireDataDirLock, DataDirLockedError } from './lock.ts';

const dirs: string[] = [];
function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-lock-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const writeLock = (dir: string, holder: Record<string, unknown>, mtime?: Date) => {
  const file = path.join(dir, 'remit.lock');
  fs.writeFileSync(
    file,
    JSON.stringify({ command: 'remit server', startedAt: '2026-01-01T00:00:00Z', ...holder }),
  );
  if (mtime) fs.utimesSync(file, mtime, mtime);
};

describe('the data-directory lock', () => {
  it('records the holder with its pid and process start time, and refuses a second holder', () => {
    const dir = dataDir();
    const lock = acquireDataDirLock(dir, 'remit server');
    const holder = JSON.parse(fs.readFileSync(path.join(dir, 'remit.lock'), 'utf8'));
    expect(holder).toMatchObject({ pid: process.pid, hostname: os.hostname(), command: 'remit server' });
    if (process.platform === 'linux') expect(holder.processStart).toMatch(/^\d+$/);
    expect(() => acquireDataDirLock(dir, 'remit migrate')).toThrow(DataDirLockedError);
    lock.release();
    expect(fs.existsSync(path.join(dir, 'remit.lock'))).toBe(false);
  });

  it('recovers a lock whose process is gone, and a half-written one', async () => {
    const dir = dataDir();
    const child = spawn(process.execPath, ['-e', '0']);
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    writeLock(dir, { pid, hostname: os.hostname() });
    acquireDataDirLock(dir, 'remit server').release();
    fs.writeFileSync(path.join(dir, 'remit.lock'), '{"pid":');
    acquireDataDirLock(dir, 'remit server').release();
  });

  it.skipIf(process.platform !== 'linux')('recovers a lock whose pid now belongs to a later process', () => {
    const dir = dataDir();
    // Our own pid, recorded with another start time: the process that wrote it is not us.
    writeLock(dir, { pid: process.pid, hostname: os.hostname(), processStart: '1' });
    acquireDataDirLock(dir, 'remit server').release();
  });

  it('a live holder on this host is respected', () => {
    const dir = dataDir();
    writeLock(dir, { pid: process.ppid, hostname: os.hostname() });
    expect(() => acquireDataDirLock(dir, 'remit server')).toThrow(DataDirLockedError);
  });

  it('another host: respected while its heartbeat is fresh, recovered once it stopped', () => {
    const dir = dataDir();
    writeLock(dir, { pid: 1, hostname: 'some-other-host' });
    expect(() => acquireDataDirLock(dir, 'remit server')).toThrow(/some-other-host/);
    writeLock(dir, { pid: 1, hostname: 'some-other-host' }, new Date(Date.now() - 5 * 60_000));
    acquireDataDirLock(dir, 'remit server').release();
  });
});
