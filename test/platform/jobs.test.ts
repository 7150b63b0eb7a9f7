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

  it('refuses a queue that was never defined', async () => {
    await expect(t.db.transaction((tx) => t.deps.jobs.enqueue(tx, 'test.unknown', {}))).rejects.toThrow(
      /never defined/,
    );
  });
});
