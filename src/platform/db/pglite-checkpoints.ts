/**
 * PGlite is one backend with no checkpointer beside it, and a backend outside a postmaster never asks
 * for a checkpoint when its WAL grows (PostgreSQL's `max_wal_size` has no effect there): it checkpointed
 * only when it closed. A process killed (kill -9, out of memory) then replayed everything written since
 * it started, at its next start — seconds after a day of ordinary use. Here the process checkpoints itself:
 * once the WAL since the last checkpoint reaches `maxWalBytes`, and every `intervalMs` when anything was
 * written, so a start after a crash replays at most about that much.
 */

/** The embedded database as the checkpoints use it: statements as the login role (CHECKPOINT needs it). */
export interface CheckpointTarget {
  query<T>(text: string): Promise<{ rows: T[] }>;
  exec(text: string): Promise<unknown>;
  readonly closed: boolean;
}

export interface CheckpointOptions {
  /** A checkpoint at least this often when anything was written; 0 turns the checkpoints off. */
  intervalMs: number;
  /** A checkpoint as soon as a look finds this much WAL since the last one. */
  maxWalBytes: number;
  /** How often to look (one short query). */
  lookEveryMs?: number;
  onError?: (error: unknown) => void;
}

export interface PgliteCheckpoints {
  /** One look now: a checkpoint if one is due. Resolves true when it ran one. */
  runOnce(): Promise<boolean>;
  stop(): void;
}

const DEFAULT_LOOK_EVERY_MS = 5_000;

export function scheduleCheckpoints(target: CheckpointTarget, options: CheckpointOptions): PgliteCheckpoints {
  let lastLsn: string | undefined;
  let lastAt = Date.now();
  let running: Promise<boolean> | undefined;
  const position = async () => {
    const { rows } = await target.query<{ lsn: string; since: string }>(
      'select pg_current_wal_insert_lsn()::text as lsn, ' +
        'pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::text as since from pg_control_checkpoint()',
    );
    return { lsn: rows[0]!.lsn, since: Number(rows[0]!.since) };
  };
  const look = async (): Promise<boolean> => {
    if (target.closed) return false;
    const { lsn, since } = await position();
    const written = lsn !== lastLsn;
    const due = since >= options.maxWalBytes || (written && Date.now() - lastAt >= options.intervalMs);
    if (!due) return false;
    await target.exec('CHECKPOINT');
    // The position after the checkpoint's own record: nothing written since means nothing to do.
    lastLsn = (await position()).lsn;
    lastAt = Date.now();
    return true;
  };
  const runOnce = () => {
    running ??= look().finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer =
    options.intervalMs > 0
      ? setInterval(
          () => {
            runOnce().catch((error: unknown) => {
              if (!target.closed) options.onError?.(error);
            });
          },
          Math.min(options.lookEveryMs ?? DEFAULT_LOOK_EVERY_MS, options.intervalMs),
        )
      : undefined;
  // A timer must not keep a process (a CLI command, a test) alive.
  timer?.unref();
  return { runOnce, stop: () => clearInterval(timer) };
}
