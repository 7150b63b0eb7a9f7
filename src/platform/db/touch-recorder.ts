/**
 * Records "last used" times off the request path: a request only marks an id; a timer writes the marks
 * with one call of `write`, never more than once a minute per id from this instance (the SQL keeps it to
 * once a minute across instances). Used for keys' `last_used_at` and sessions' `last_seen_at`.
 */
export class TouchRecorder {
  private readonly pending = new Set<string>();
  private readonly writtenAt = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (uids: string[]) => Promise<void>,
    private readonly onError: (error: unknown) => void,
    flushEveryMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  mark(uid: string, now = Date.now()): void {
    const last = this.writtenAt.get(uid);
    if (last !== undefined && now - last < 60_000) return;
    this.writtenAt.set(uid, now);
    this.pending.add(uid);
  }

  /** Writes what is marked; resolves when written (tests and shutdown wait on it). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const uids = [...this.pending];
      this.pending.clear();
      try {
        await this.write(uids);
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
