import type { Db } from '../../platform/db/client.ts';
import { asService } from '../../platform/db/session-role.ts';
import { touchLastUsed } from './api-keys.repository.ts';

const MINUTE_MS = 60_000;

/**
 * Records keys' `last_used_at` off the request path: a request only marks the key; a timer writes the
 * marks in one statement, and never more than once a minute per key from this instance (the SQL itself
 * keeps it to once a minute across instances).
 */
export class LastUsedRecorder {
  private readonly pending = new Set<string>();
  private readonly writtenAt = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
    flushEveryMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  mark(keyUid: string, now = Date.now()): void {
    const last = this.writtenAt.get(keyUid);
    if (last !== undefined && now - last < MINUTE_MS) return;
    this.writtenAt.set(keyUid, now);
    this.pending.add(keyUid);
  }

  /** Writes what is marked; resolves when written (tests and shutdown wait on it). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const uids = [...this.pending];
      this.pending.clear();
      try {
        // One statement for the keys of every organization seen: the bypass, by design.
        await asService(() => touchLastUsed(this.db, uids));
      } catch (error) {
        this.onError(error);
      }
      if (this.writtenAt.size > 100_000) this.writtenAt.clear();
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
