import { performance } from 'node:perf_hooks';
import PgBoss from 'pg-boss';
import { runWithDbContext } from '../db/async-context.ts';
import type { Database, DbOrTx } from '../db/client.ts';
import { rawClientOf } from '../db/client.ts';
import { afterCommit, inRequestTransaction } from '../db/request-scope.ts';
import { asService } from '../db/session-role.ts';
import { NO_METRICS, type JobOutcome, type Metrics } from '../observability/metrics.ts';
import { inSpan } from '../observability/tracing.ts';

export type JobHandler<T> = (data: T, job: { id: string; name: string }) => Promise<void>;

export interface EnqueueOptions {
  /** Run no earlier than this. */
  startAfter?: Date;
  /** At most one queued job with this key per queue (pg-boss singleton). */
  singletonKey?: string;
  retryLimit?: number;
  retryDelaySeconds?: number;
  /** pg-boss's exponential backoff between retries (with jitter), from a 1-second base. */
  retryBackoff?: boolean;
}

export interface QueueOptions {
  /**
   * How long a fetched job may stay `active` before the queue presumes its worker dead: it is then
   * failed and retried (if it has retries left). Default 15 minutes.
   */
  expireInSeconds?: number;
  /**
   * How many of the queue's jobs this process runs at once (default 1): that many workers, each
   * fetching and running one job, so a job that hangs holds one of them and not the queue.
   */
  concurrency?: number;
}

interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

export const PGBOSS_SCHEMA = 'pgboss';

/** One of this process's workers of a queue: its pg-boss id, and whether it is running a job. */
interface Slot {
  id?: string;
  busy: boolean;
}

/** How long after an enqueue outside a request's unit of work this process's worker looks for it. */
const WAKE_DELAY_MS = 20;

/**
 * pg-boss talks to whichever engine we run on through our own connection: PGlite has no socket, and
 * sharing the handle keeps PGlite's single-writer rule. Multi-statement SQL without parameters (pg-boss
 * installing its schema) goes through `exec`, whose last result is what pg-boss reads.
 */
function executorFor(database: Database, stopped: { yes: boolean }, gate?: () => Promise<void>): SqlExecutor {
  const inner = engineExecutor(database, gate);
  return {
    // pg-boss completes or fails a job without awaiting it. A handler that outlives the stop's grace
    // was already failed by the stop (and will be retried): its late completion must not reach a
    // database that closes next — there it was an unhandled rejection. The job ends as it would had the
    // process exited. (No result: pg-boss counts a completion without one as none done.)
    executeSql: (text, values) =>
      stopped.yes ? Promise.resolve(null as unknown as { rows: unknown[] }) : inner.executeSql(text, values),
  };
}

function engineExecutor(database: Database, gate?: () => Promise<void>): SqlExecutor {
  const lite = database.pglite;
  if (lite) {
    return {
      async executeSql(text, values) {
        // Every fetch, completion and maintenance step of the queue writes: none while the disk is low.
        await gate?.();
        // The queue's own tables are not tenant data: pg-boss always runs as the login role.
        return asService(async () => {
          if (values && values.length > 0) return lite.query(text, values);
          const results = await lite.exec(text);
          return results[results.length - 1] ?? { rows: [] };
        });
      },
    };
  }
  const pool = database.pool!;
  return { executeSql: (text, values) => asService(() => pool.query(text, values)) };
}

/** An executor bound to a transaction: what pg-boss writes commits or rolls back with it. */
function transactionExecutor(tx: DbOrTx): SqlExecutor {
  const client = rawClientOf(tx);
  return { executeSql: (text, values) => client.query(text, values) };
}

/**
 * Durable background jobs in the service's own database. Any number of processes may work the queues;
 * a job is enqueued inside the transaction that writes the rows it acts on.
 */
export class Jobs {
  private readonly queues = new Set<string>();
  /** Queues and schedules as the database had them when this process started. */
  private readonly declaredQueues = new Map<string, { expireInSeconds: number | null }>();
  private readonly declaredSchedules = new Map<string, string>();
  private readonly handlers = new Map<string, JobHandler<never>>();
  private working = false;
  /** Set as `stop()` begins: a start of the workers still under way starts nothing more. */
  private stopping = false;
  /** The workers' start, which `stop()` waits for (a server starts them after it listens). */
  private starting: Promise<void> | undefined;
  /** This process's workers of each queue it works (their pg-boss ids once work() returned). */
  private readonly workers = new Map<string, Slot[]>();
  private readonly concurrency = new Map<string, number>();
  private readonly wakeTimers = new Map<string, NodeJS.Timeout>();

  private constructor(
    private readonly boss: PgBoss,
    private readonly metrics: Metrics,
    private readonly stopped: { yes: boolean },
    /** Starts pg-boss's timekeeper (the schedules) on its own instance; undefined: this process keeps none. */
    private readonly startTimekeeper: (() => Promise<PgBoss>) | undefined,
  ) {}

  /** The instance that keeps the schedules, once started (stopped with the queue). */
  private timekeeper: PgBoss | undefined;

  static async start(
    database: Database,
    options: {
      onError?: (error: unknown) => void;
      supervise?: boolean;
      pollIntervalSeconds?: number;
      /** How often a supervising process expires jobs whose worker died, and archives (pg-boss: 120 s). */
      maintenanceIntervalSeconds?: number;
      /** Throws to hold the queue's statements back (the embedded database's disk is low). */
      writeGate?: () => Promise<void>;
      /** Counts and times the jobs this process runs (docs/observability.md). */
      metrics?: Metrics | undefined;
    } = {},
  ): Promise<Jobs> {
    const stopped = { yes: false };
    const db = executorFor(database, stopped, options.writeGate);
    const supervise = options.supervise ?? true;
    const boss = new PgBoss({
      db,
      schema: PGBOSS_SCHEMA,
      supervise,
      // pg-boss checks every schedule as its timekeeper starts (cron-parser working out each one's last
      // time: ≈ 130 ms of CPU for our 16), which held a server's first answer back. The schedules are
      // kept by a second instance on the same connection, started with the workers (`startWorkers`:
      // once a server listens).
      schedule: false,
      ...(options.maintenanceIntervalSeconds
        ? { maintenanceIntervalSeconds: options.maintenanceIntervalSeconds }
        : {}),
      migrate: true,
    });
    boss.on('error', (error) => options.onError?.(error));
    await boss.start();
    const startTimekeeper = supervise
      ? async () => {
          const timekeeper = new PgBoss({
            db,
            schema: PGBOSS_SCHEMA,
            supervise: false,
            schedule: true,
            migrate: false,
          });
          timekeeper.on('error', (error) => options.onError?.(error));
          await timekeeper.start();
          return timekeeper;
        }
      : undefined;
    const jobs = new Jobs(boss, options.metrics ?? NO_METRICS, stopped, startTimekeeper);
    // What earlier starts declared, read once: a start that finds everything as it should be writes
    // nothing (each declaration was a statement or two, one after another, under the schema lock).
    for (const queue of (await boss.getQueues()) as { name: string; expireInSeconds: number | null }[]) {
      jobs.declaredQueues.set(queue.name, { expireInSeconds: queue.expireInSeconds });
    }
    for (const row of (await boss.getSchedules()) as {
      name: string;
      cron: string;
      timezone: string;
      data: unknown;
    }[]) {
      jobs.declaredSchedules.set(row.name, JSON.stringify([row.cron, row.timezone, row.data ?? {}]));
    }
    jobs.pollIntervalSeconds = options.pollIntervalSeconds ?? 2;
    return jobs;
  }

  private pollIntervalSeconds = 2;

  /**
   * Declares a queue and (optionally) the function that works it. Call before `startWorkers`. Options
   * given are written to the queue on every start (pg-boss keeps a queue's first options otherwise), so
   * a changed setting takes effect for jobs enqueued from then on.
   */
  async define<T extends object>(
    name: string,
    handler?: JobHandler<T>,
    options?: QueueOptions,
  ): Promise<void> {
    const { concurrency, ...queueOptions } = options ?? {};
    if (concurrency !== undefined) this.concurrency.set(name, Math.max(1, Math.floor(concurrency)));
    if (!this.queues.has(name)) {
      const declared = this.declaredQueues.get(name);
      if (!declared) await this.boss.createQueue(name);
      const stored = options?.expireInSeconds !== undefined ? queueOptions : undefined;
      const changed = stored !== undefined && declared?.expireInSeconds !== stored.expireInSeconds;
      if (stored && (!declared || changed)) await this.boss.updateQueue(name, { name, ...stored });
      this.queues.add(name);
    }
    if (handler) {
      this.handlers.set(name, handler as JobHandler<never>);
      if (this.working) await this.workQueue(name);
    }
  }

  private async workQueue(name: string): Promise<void> {
    const handler = this.handlers.get(name)!;
    const slots: Slot[] = [];
    this.workers.set(name, slots);
    for (let n = 0; n < (this.concurrency.get(name) ?? 1); n += 1) {
      // Filled in once work() returns; the first batch may come before (it then waits the interval).
      const slot: Slot = { busy: false };
      slots.push(slot);
      slot.id = await this.boss.work<object>(
        name,
        { pollingIntervalSeconds: this.pollIntervalSeconds },
        async (batch) => {
          slot.busy = true;
          // A job found: there may be more, and an idle worker of the queue looks for them now rather
          // than at its next poll (a backlog spreads over the workers at once).
          this.notifyIdle(name);
          try {
            for (const job of batch) await this.run(handler as JobHandler<object>, job);
          } finally {
            slot.busy = false;
          }
          // pg-boss waits out the polling interval after every job it found: a queue with a backlog
          // drained one job per interval (webhook deliveries at two a second in production). Found one,
          // look again at once; an empty fetch waits the interval as before.
          if (slot.id) this.boss.notifyWorker(slot.id);
        },
      );
    }
  }

  /** One worker of the queue that is not running a job looks for one now (none: each looks when done). */
  private notifyIdle(name: string): void {
    if (this.stopped.yes) return;
    const idle = this.workers.get(name)?.find((slot) => !slot.busy && slot.id);
    if (idle) this.boss.notifyWorker(idle.id!);
  }

  /** One job: its own trace, its log lines marked with it, its outcome and duration counted. */
  private async run(handler: JobHandler<object>, job: PgBoss.Job<object>): Promise<void> {
    const organizationUid = (job.data as { organization_uid?: unknown }).organization_uid;
    const logFields = {
      queue: job.name,
      job_id: job.id,
      ...(typeof organizationUid === 'string' ? { organization_uid: organizationUid } : {}),
    };
    const started = performance.now();
    let outcome: JobOutcome = 'failed';
    try {
      await inSpan(
        `job ${job.name}`,
        {
          kind: 'consumer',
          root: true,
          attributes: {
            'messaging.system': 'pg-boss',
            'messaging.destination.name': job.name,
            'messaging.message.id': job.id,
          },
        },
        () =>
          // A job is the process's own work: it acts across organizations, as the login role
          // (docs/security.md#the-bypass); each handler still names the organization in every query.
          asService(() =>
            runWithDbContext({ logFields }, () => handler(job.data, { id: job.id, name: job.name })),
          ),
      );
      outcome = 'completed';
    } finally {
      this.metrics.job(job.name, outcome, (performance.now() - started) / 1000);
    }
  }

  async startWorkers(): Promise<void> {
    // A server starts working once it listens: a stop may come first, or meanwhile.
    if (this.working || this.stopping) return;
    this.working = true;
    this.starting = (async () => {
      for (const name of this.handlers.keys()) {
        if (this.stopping) return;
        await this.workQueue(name);
      }
      if (this.startTimekeeper && !this.stopping) this.timekeeper = await this.startTimekeeper();
    })();
    await this.starting;
  }

  /** Enqueues a job inside `tx`: no job exists unless the transaction commits. Returns the job id. */
  async enqueue<T extends object>(
    tx: DbOrTx,
    name: string,
    data: T,
    options: EnqueueOptions = {},
  ): Promise<string> {
    if (!this.queues.has(name)) throw new Error(`Queue ${name} was never defined`);
    // pg-boss names the delay `retryDelay` (seconds); ours says its unit. Passed through as it was, pg-boss
    // ignored it and retried at once.
    const { retryDelaySeconds, ...rest } = options;
    const id = await this.boss.send(name, data, {
      ...rest,
      ...(retryDelaySeconds !== undefined ? { retryDelay: retryDelaySeconds } : {}),
      db: transactionExecutor(tx),
    } as PgBoss.SendOptions);
    if (!id) throw new Error(`Job for ${name} was not created (singleton already queued?)`);
    if (!options.startAfter || options.startAfter.getTime() <= Date.now()) await this.wakeAfterCommit(name);
    return id;
  }

  /**
   * This process's worker of the queue looks for the new job once its transaction has committed,
   * instead of at its next poll (up to the polling interval later; other processes still find it at
   * theirs). A request's unit of work says when it commits; any other transaction is given a moment
   * (WAKE_DELAY_MS) — a look before the commit finds nothing and costs one empty fetch.
   */
  private async wakeAfterCommit(name: string): Promise<void> {
    if (!this.workers.has(name)) return;
    const wake = () => this.notifyIdle(name);
    if (inRequestTransaction()) {
      await afterCommit(wake);
      return;
    }
    if (this.wakeTimers.has(name)) return;
    const timer = setTimeout(() => {
      this.wakeTimers.delete(name);
      wake();
    }, WAKE_DELAY_MS);
    timer.unref();
    this.wakeTimers.set(name, timer);
  }

  async schedule(name: string, cron: string, data: object = {}): Promise<void> {
    if (this.declaredSchedules.get(name) === JSON.stringify([cron, 'UTC', data])) return;
    await this.boss.schedule(name, cron, data, { tz: 'UTC' });
    this.declaredSchedules.set(name, JSON.stringify([cron, 'UTC', data]));
  }

  /** After the request's writes commit: the queue's own connection must not wait on that transaction. */
  async cancel(name: string, id: string): Promise<void> {
    await afterCommit(() => this.boss.cancel(name, id));
  }

  async getJob(name: string, id: string) {
    return this.boss.getJobById(name, id);
  }

  /**
   * Stops fetching jobs at once and waits up to `graceMs` for the running ones to finish (an SMTP send
   * may take 120 s: cutting it off would deliver a message whose sending is then recorded as failed).
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    for (const timer of this.wakeTimers.values()) clearTimeout(timer);
    this.wakeTimers.clear();
    // A start under way finishes what it began (so what it started is stopped below), nothing more.
    await this.starting?.catch(() => undefined);
    const options = { graceful: true, wait: true, timeout: graceMs, close: false };
    try {
      // Both at once: one failing to stop must not keep the other fetching.
      const results = await Promise.allSettled([this.timekeeper?.stop(options), this.boss.stop(options)]);
      const failed = results.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      this.stopped.yes = true;
    }
  }
}
