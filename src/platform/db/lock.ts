import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * PGlite has no lock of its own: two processes on one data directory silently lose writes. So the first
 * process takes `DATA_DIR/remit.lock` exclusively and every later one refuses to start, naming the holder.
 */
export class DataDirLockedError extends Error {
  constructor(
    readonly lockPath: string,
    readonly holder: LockHolder,
  ) {
    super(
      `The data directory ${path.dirname(lockPath)} is in use by another Remit process ` +
        `(pid ${holder.pid} on ${holder.hostname}, "${holder.command}", since ${holder.startedAt}). ` +
        `Stop it first, or point DATA_DIR elsewhere.`,
    );
  }
}

export interface LockHolder {
  pid: number;
  hostname: string;
  command: string;
  startedAt: string;
}

export interface DataDirLock {
  release(): void;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(lockPath: string): LockHolder | undefined {
  try {
    return JSON.parse(fs.readFileSync(lockPath, 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
}

export function acquireDataDirLock(dataDir: string, command: string): DataDirLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockPath = path.join(dataDir, 'remit.lock');
  const me: LockHolder = {
    pid: process.pid,
    hostname: os.hostname(),
    command,
    startedAt: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx');
      fs.writeFileSync(fd, JSON.stringify(me));
      fs.closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const holder = readHolder(lockPath);
        if (holder?.pid === process.pid) fs.rmSync(lockPath, { force: true });
        process.off('exit', release);
      };
      process.on('exit', release);
      return { release };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readHolder(lockPath);
      // A lock left by a process that died (or a half-written one) is stale: clear it and retry.
      const stale = holder === undefined || (holder.hostname === os.hostname() && !isAlive(holder.pid));
      if (!stale) throw new DataDirLockedError(lockPath, holder);
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`Could not take the lock ${lockPath}`);
}
