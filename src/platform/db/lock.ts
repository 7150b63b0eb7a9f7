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
  /** The kernel's start time of the holder (Linux: /proc/<pid>/stat field 22), to tell a reused pid. */
  processStart?: string;
}

/** The holder rewrites the lock's mtime this often; another host may take a lock this much older. */
const HEARTBEAT_MS = 10_000;
const ABANDONED_AFTER_MS = 60_000;

/** When the process with this pid started, in clock ticks since boot; undefined off Linux or if gone. */
function processStart(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may contain spaces: count from after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Whether the process that wrote the lock is gone. On this host: its pid is not alive, or the pid now
 * belongs to a process that started later (pids are reused quickly in containers, where a restarted
 * server often gets the same low pid). On another host (a container restarted under a new hostname on
 * the same volume) the pid means nothing: the lock is abandoned when its heartbeat stopped.
 */
function isStale(lockPath: string, holder: LockHolder | undefined): boolean {
  if (holder === undefined) return true; // half-written by a start that was interrupted
  if (holder.hostname === os.hostname()) {
    if (!isAlive(holder.pid)) return true;
    const now = processStart(holder.pid);
    return holder.processStart !== undefined && now !== undefined && now !== holder.processStart;
  }
  try {
    return Date.now() - fs.statSync(lockPath).mtimeMs > ABANDONED_AFTER_MS;
  } catch {
    return true;
  }
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
  // Its owner's alone: it holds the database and the key to stored credentials, and the admin socket
  // is served only in a directory no one else may write (platform/admin-socket.ts).
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lockPath = path.join(dataDir, 'remit.lock');
  const me: LockHolder = {
    pid: process.pid,
    hostname: os.hostname(),
    command,
    startedAt: new Date().toISOString(),
    processStart: processStart(process.pid),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx');
      fs.writeFileSync(fd, JSON.stringify(me));
      fs.closeSync(fd);
      let released = false;
      const heartbeat = setInterval(() => {
        const now = new Date();
        try {
          fs.utimesSync(lockPath, now, now);
        } catch {
          // The lock file was removed by hand; nothing to keep alive.
        }
      }, HEARTBEAT_MS);
      heartbeat.unref();
      const release = () => {
        if (released) return;
        released = true;
        clearInterval(heartbeat);
        const holder = readHolder(lockPath);
        if (holder?.pid === process.pid) fs.rmSync(lockPath, { force: true });
        process.off('exit', release);
      };
      process.on('exit', release);
      return { release };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readHolder(lockPath);
      if (!isStale(lockPath, holder)) throw new DataDirLockedError(lockPath, holder!);
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`Could not take the lock ${lockPath}`);
}
