import type { ChannelListener, Notifications } from '../../platform/db/notifications.ts';

/** What migration 0021's trigger NOTIFYs, with the task's uid, when a task's status or resolution moves. */
export const TASK_STATUS_CHANNEL = 'remit_task_status';

/**
 * While notifications are not heard (not yet listening, or the listening connection was lost) a wait
 * re-reads the task this often instead of trusting a wake-up that may never come.
 */
const UNHEARD_RECHECK_MS = 1_000;

/** One wait: registered before the task is read, so a change committed in between is not missed. */
export interface TaskWatch {
  /** Resolves when the task may have changed, after `ms`, or when waiting ends (abort, shutdown). */
  changed(ms: number, signal: AbortSignal): Promise<void>;
  dispose(): void;
}

/**
 * The requests of this process waiting for a task to be decided (`GET /api/work-tasks/{uid}?wait=N`),
 * woken by `remit_task_status` notifications from whichever process decided. A wake-up only says "read
 * it again": the request re-reads the task in its tenant and decides whether to answer.
 */
export class TaskStatusWaiters implements ChannelListener {
  private readonly watches = new Map<string, Set<Watch>>();
  private heard = false;
  private closed = false;

  constructor(private readonly options: { recheckMs: number }) {}

  notify(payload: string): void {
    for (const watch of this.watches.get(payload) ?? []) watch.wake();
  }

  live(isLive: boolean): void {
    this.heard = isLive;
    // Back after a gap: anything may have changed meanwhile.
    if (isLive) this.wakeAll();
  }

  get size(): number {
    let n = 0;
    for (const set of this.watches.values()) n += set.size;
    return n;
  }

  /** Whether a decision made anywhere is heard now (else waits re-read at least every second). */
  get isLive(): boolean {
    return this.heard;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  watch(taskUid: string): TaskWatch {
    const watch = new Watch(
      () => this.recheckMs(),
      () => this.closed,
    );
    let set = this.watches.get(taskUid);
    if (!set) this.watches.set(taskUid, (set = new Set()));
    set.add(watch);
    const watches = this.watches;
    return {
      changed: (ms, signal) => watch.changed(ms, signal),
      dispose() {
        watch.wake();
        set.delete(watch);
        if (set.size === 0 && watches.get(taskUid) === set) watches.delete(taskUid);
      },
    };
  }

  /** Shutdown: every wait answers now with what it has, and no new one waits. */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }

  private recheckMs(): number {
    return this.heard ? this.options.recheckMs : Math.min(this.options.recheckMs, UNHEARD_RECHECK_MS);
  }

  private wakeAll(): void {
    for (const set of this.watches.values()) for (const watch of set) watch.wake();
  }
}

class Watch {
  private woken = false;
  private resolve: (() => void) | null = null;

  constructor(
    private readonly recheckMs: () => number,
    private readonly closed: () => boolean,
  ) {}

  wake(): void {
    this.woken = true;
    this.resolve?.();
  }

  changed(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || this.closed() || signal.aborted) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.resolve = null;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(ms, this.recheckMs())));
      signal.addEventListener('abort', done, { once: true });
      this.resolve = done;
    });
  }
}

/** The waiters of one app, listening from the start (in the background: a start never waits for it). */
export function startTaskStatusWaiters(
  notifications: Notifications,
  recheckMs: number,
): { waiters: TaskStatusWaiters; stop: () => void } {
  const waiters = new TaskStatusWaiters({ recheckMs });
  const stop = notifications.listen(TASK_STATUS_CHANNEL, waiters);
  return { waiters, stop };
}
