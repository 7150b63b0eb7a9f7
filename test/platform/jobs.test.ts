import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { Jobs } from '../../src/platform/jobs/jobs.ts';
import { organizations } from '../../src/modules/tenancy/tenancy.tables.ts';
import { until } from '../helpers/until.ts';

let t: TestApp;
const seen: { name: string; data: unknown }[] = [];

beforeAll(async () => {
  t = await createTestApp({ workers: true });
  await t.deps.jobs.define<{ orgUid: string }>('test.echo', async (data) => {
    seen.push({ name: 'test.echo', data });
  });
  await t.deps.jobs.define('test.idle');
});
afterAll(async () => t?.close());

async function jobsIn(queue: string) {
  return rawQuery<{ id: string; state: string; data: unknown }>(
    t.db,
    `select id, state, data from pgboss.job where name = $1`,
    [queue],
  );
}

const waitFor = (check: () => boolean) => until(async () => check(), 'the job');

describe('jobs', () => {
  it('a job enqueued in a committed transaction exists and is worked', async () => {
    const jobId = await t.db.transaction(async (tx) => {
      const [org] = await tx.insert(organizations).values({ name: 'Committed' }).returning();
      return t.deps.jobs.enqueue(tx, 'test.echo', { orgUid: org!.uid });
    });
    expect(jobId).toEqual(expect.any(String));
    await waitFor(() => seen.length > 0);
    expect(seen[0]!.data).toMatchObject({ orgUid: expect.any(String) });
    const job = await t.deps.jobs.getJob('test.echo', jobId);
    expect(job?.id).toBe(jobId);
  });

  it('retry options reach the queue: the delay in seconds, the limit and the backoff', async () => {
    const id = await t.db.transaction((tx) =>
      t.deps.jobs.enqueue(tx, 'test.idle', { n: 2 }, { retryLimit: 4, retryDelaySeconds: 37 }),
    );
    const [row] = await rawQuery<{ retry_limit: number; retry_delay: number; retry_backoff: boolean }>(
      t.db,
      `select retry_limit, retry_delay, retry_backoff from pgboss.job where id = $1`,
      [id],
    );
    expect(row).toEqual({ retry_limit: 4, retry_delay: 37, retry_backoff: false });
  });

  it('a rolled-back transaction enqueues nothing (and writes no row)', async () => {
    const before = (await jobsIn('test.idle')).length;
    await expect(
      t.db.transaction(async (tx) => {
        await tx.insert(organizations).values({ name: 'Rolled back' });
        await t.deps.jobs.enqueue(tx, 'test.idle', { n: 1 });
        // Inside the transaction the job is visible…
        expect((await rawQuery(tx, `select 1 from pgboss.job where name = 'test.idle'`)).length).toBe(
          before + 1,
        );
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    // …and after the rollback neither the job nor the row exists.
    expect((await jobsIn('test.idle')).length).toBe(before);
    expect(await t.db.select().from(organizations).where(eq(organizations.name, 'Rolled back'))).toHaveLength(
      0,
    );
  });

  it("a queue's expiry is written at every start, so a changed setting applies to new jobs", async () => {
    await t.deps.jobs.define('test.expiring', undefined, { expireInSeconds: 40 });
    const expiry = async () =>
      (
        await rawQuery<{ expire_seconds: number }>(
          t.db,
          `select expire_seconds from pgboss.queue where name = 'test.expiring'`,
        )
      )[0]!.expire_seconds;
    expect(await expiry()).toBe(40);
    // Another process (or this one restarted) with another setting: the queue follows it.
    const restarted = await Jobs.start(t.database, { supervise: false });
    try {
      await restarted.define('test.expiring', undefined, { expireInSeconds: 25 });
      expect(await expiry()).toBe(25);
      const id = await t.db.transaction((tx) => restarted.enqueue(tx, 'test.expiring', {}));
      const [job] = await rawQuery<{ seconds: number }>(
        t.db,
        `select extract(epoch from expire_in)::int as seconds from pgboss.job where id = $1`,
        [id],
      );
      expect(job!.seconds).toBe(25);
    } finally {
      await restarted.stop();
    }
  });

  it('a start that finds its queues and schedules as declared writes nothing; a change is written', async () => {
    await t.deps.jobs.define('test.steady', undefined, { expireInSeconds: 30 });
    await t.deps.jobs.schedule('test.steady', '5 * * * *');
    const stamps = async () => ({
      queue: (
        await rawQuery<{ at: string }>(
          t.db,
          `select updated_on::text as at from pgboss.queue where name = 'test.steady'`,
        )
      )[0]!.at,
      schedule: (
        await rawQuery<{ at: string; cron: string }>(
          t.db,
          `select updated_on::text as at, cron from pgboss.schedule where name = 'test.steady'`,
        )
      )[0]!,
    });
    const before = await stamps();
    const restarted = await Jobs.start(t.database, { supervise: false });
    try {
      await restarted.define('test.steady', undefined, { expireInSeconds: 30 });
      await restarted.schedule('test.steady', '5 * * * *');
      expect(await stamps()).toEqual(before);
      await restarted.schedule('test.steady', '10 * * * *');
      expect((await stamps()).schedule.cron).toBe('10 * * * *');
    } finally {
      await restarted.stop();
    }
  });

  it('a backlog drains at once: a worker that found a job looks again without waiting its interval', async () => {
    // A minute's interval: one job per interval would take 4 minutes for these five.
    const slow = await Jobs.start(t.database, { supervise: false, pollIntervalSeconds: 60 });
    const done: number[] = [];
    try {
      await slow.define<{ n: number }>('test.backlog', async (data) => {
        done.push(data.n);
      });
      await t.db.transaction(async (tx) => {
        for (let n = 0; n < 5; n++) await slow.enqueue(tx, 'test.backlog', { n });
      });
      await slow.startWorkers();
      await until(async () => done.length === 5, 'five jobs worked in one interval');
      expect([...done].sort()).toEqual([0, 1, 2, 3, 4]);
    } finally {
      await slow.stop();
    }
  });

  it("a job enqueued beside a working process is worked once committed, not at that worker's next poll", async () => {
    const slow = await Jobs.start(t.database, { supervise: false, pollIntervalSeconds: 60 });
    const done: string[] = [];
    try {
      await slow.define<{ n: number }>('test.wake', async (data) => {
        done.push(`job ${data.n}`);
      });
      await slow.startWorkers();
      await t.db.transaction((tx) => slow.enqueue(tx, 'test.wake', { n: 0 }));
      await until(async () => done.length === 1, 'the first job');
      // After a job the worker looks once more, finds nothing, and would next look a minute later. This
      // pause only lets that empty look happen first; it cannot make the test fail.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await t.db.transaction((tx) => slow.enqueue(tx, 'test.wake', { n: 1 }));
      await until(async () => done.length === 2, 'the job, well within the minute');
      // A job for later is not looked for now.
      const later = new Date(Date.now() + 3_600_000);
      await t.db.transaction((tx) => slow.enqueue(tx, 'test.wake', { n: 2 }, { startAfter: later }));
      expect(done).toEqual(['job 0', 'job 1']);
    } finally {
      await slow.stop();
    }
  });

  it('a handler that outlives the stop finishes without touching the database the stop handed back', async () => {
    const lingering = await Jobs.start(t.database, { supervise: false, pollIntervalSeconds: 0.5 });
    let started = false;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let finished!: () => void;
    const ended = new Promise<void>((resolve) => (finished = resolve));
    await lingering.define('test.lingering', async () => {
      started = true;
      await held;
      finished();
    });
    const id = await t.db.transaction((tx) => lingering.enqueue(tx, 'test.lingering', {}));
    await lingering.startWorkers();
    await until(async () => started, 'the handler to start');
    // The grace ends with the handler still running: the stop fails the job for a retry.
    await lingering.stop(1);
    const [failed] = await rawQuery<{ state: string }>(t.db, `select state from pgboss.job where id = $1`, [
      id,
    ]);
    expect(failed!.state).toBe('retry');
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      release();
      await ended;
      await new Promise((resolve) => setImmediate(resolve));
      // Its late completion is not written (the job stays failed, to be retried), and throws nothing.
      const [after] = await rawQuery<{ state: string }>(t.db, `select state from pgboss.job where id = $1`, [
        id,
      ]);
      expect(after!.state).toBe('retry');
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it("the maintenance interval is configurable: a dead worker's job is expired and retried that soon", async () => {
    // A supervising process with maintenance every second; pg-boss's own 120 s would outlast the wait.
    const supervising = await Jobs.start(t.database, { supervise: true, maintenanceIntervalSeconds: 1 });
    try {
      await supervising.define('test.orphaned', undefined, { expireInSeconds: 1 });
      const id = await t.db.transaction((tx) => supervising.enqueue(tx, 'test.orphaned', {}));
      // Fetched by a worker that died an hour ago: active, and long past its expiry.
      await rawQuery(
        t.db,
        `update pgboss.job set state = 'active', started_on = now() - interval '1 hour' where id = $1`,
        [id],
      );
      await until(async () => {
        const [job] = await rawQuery<{ state: string }>(t.db, `select state from pgboss.job where id = $1`, [
          id,
        ]);
        return job!.state === 'retry';
      }, 'the expired job to be put back for a retry');
    } finally {
      await supervising.stop();
    }
  });

  it('a supervising process keeps the schedules once it works the queues, not while it starts', async () => {
    await rawQuery(t.db, `update pgboss.version set cron_on = null`);
    const supervising = await Jobs.start(t.database, { supervise: true });
    try {
      // Started, not yet working (a server before it listens): no schedule was checked.
      const [before] = await rawQuery<{ cron_on: string | null }>(t.db, `select cron_on from pgboss.version`);
      expect(before!.cron_on).toBeNull();
      await supervising.startWorkers();
      await until(async () => {
        const [after] = await rawQuery<{ cron_on: string | null }>(
          t.db,
          `select cron_on from pgboss.version`,
        );
        return after!.cron_on !== null;
      }, 'the timekeeper to check the schedules');
    } finally {
      await supervising.stop();
    }
  });

  it('a stop while the workers start (a SIGTERM just after listen): both finish, a later start starts nothing', async () => {
    const racing = await Jobs.start(t.database, { supervise: true });
    // Many queues: the workers' start outlasts the stop's.
    for (let i = 0; i < 40; i += 1) await racing.define(`test.racing.${i}`, async () => undefined);
    const started = racing.startWorkers();
    const stopped = racing.stop(1000);
    await expect(Promise.all([started, stopped])).resolves.toEqual([undefined, undefined]);
    await expect(racing.startWorkers()).resolves.toBeUndefined();
  });

  it('refuses a queue that was never defined', async () => {
    await expect(t.db.transaction((tx) => t.deps.jobs.enqueue(tx, 'test.unknown', {}))).rejects.toThrow(
      /never defined/,
    );
  });
});
