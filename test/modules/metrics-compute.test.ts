import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { rawQuery } from '../../src/platform/db/client.ts';
import { invoices } from '../../src/modules/invoices/invoices.tables.ts';
import { parties } from '../../src/modules/parties/parties.tables.ts';
import { initOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import {
  computePresetValues,
  daysToBackfill,
  installMetricPresets,
  markMetricsStale,
  MAX_BACKFILL_DAYS,
  METRIC_REFRESH_QUEUE,
  REFRESH_DELAY_SECONDS,
  refreshPresetValues,
  runDailyPresetJob,
} from '../../src/modules/metrics/metric-presets.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { engine } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';

/**
 * Preset receivables metrics when they are needed (docs/metrics.md): computed on the first read, kept
 * fresh after invoice and payment changes, computed on demand by admins, and the daily job's backfill.
 */
let t: TestApp;
let p: Principals;

const DAY = 86_400_000;
const tag = () => Math.random().toString(36).slice(2, 8);
const utcDay = (instant: Date) => instant.toISOString().slice(0, 10);
const noon = (day: string) => new Date(`${day}T12:00:00Z`);

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' }, workers: true });
  p = await createPrincipals(t);
  await installMetricPresets(t.db, p.orgA.uid);
  await installMetricPresets(t.db, p.orgB.uid);
}, 120_000);
afterAll(async () => t?.close());
afterEach(() => {
  vi.useRealTimers();
});

/** A new organization with the presets installed (as `remit init` does), and its admin's key. */
async function newBooks(label = 'Books') {
  const books = await initOrganization(t.db, t.config.apiKeyPepper, {
    organizationName: `${label} ${tag()}`,
    email: `books-${tag()}@books.test`,
  });
  await installMetricPresets(t.db, books.organization_uid);
  return books;
}

const series = (key: string, metricUid: string, query: Record<string, string> = {}) =>
  call(t.app, 'GET', `/api/metrics/${metricUid}/values`, { key, query });

async function valuesOf(key: string, metricUid: string, query: Record<string, string> = {}) {
  const res = await series(key, metricUid, query);
  expect(res.status, res.raw).toBe(200);
  return res.body.data.items as { metric_date: string; value: number; entity_uid: string }[];
}

/** An open receivable of `cents` (its tax: no lines), through the API. */
async function receivable(key: string, cents: number, issued: Date, due: Date) {
  const res = await call(t.app, 'POST', '/api/invoices', {
    key,
    body: {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `INV-${tag()}`,
      currency: 'USD',
      status: 'open',
      issue_date: issued.toISOString(),
      due_date: due.toISOString(),
      tax_cents: cents,
    },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as { uid: string };
}

async function pay(key: string, invoiceUid: string, cents: number) {
  const res = await call(t.app, 'POST', `/api/invoices/${invoiceUid}/payments`, {
    key,
    body: { amount_cents: cents },
  });
  expect(res.status, res.raw).toBe(201);
}

const refreshJobs = (organizationUid: string) =>
  rawQuery<{ state: string; start_after: Date; created_on: Date }>(
    t.db,
    `select state, start_after, created_on from pgboss.job where name = $1 and data->>'organization_uid' = $2`,
    [METRIC_REFRESH_QUEUE, organizationUid],
  );

// ---------------------------------------------------------------------------------------------------
describe('computed when first asked for', () => {
  it('a new organization reads its values at once, before any job ran', async () => {
    const books = await newBooks();
    const now = new Date();
    const today = utcDay(now);
    await receivable(
      books.api_key,
      100_000,
      new Date(now.getTime() - 40 * DAY),
      new Date(now.getTime() - 10 * DAY),
    );
    await receivable(
      books.api_key,
      25_000,
      new Date(now.getTime() - 2 * DAY),
      new Date(now.getTime() + 28 * DAY),
    );

    const overdue = await valuesOf(books.api_key, 'overdue_amount_cents', { from: today, to: today });
    expect(overdue).toHaveLength(1);
    expect(overdue[0]).toMatchObject({
      metric_date: today,
      value: 100_000,
      entity_uid: books.organization_uid,
    });
    // One computation gave every preset of the day.
    const [current] = await valuesOf(books.api_key, 'aging_current_cents', { from: today, to: today });
    expect(current!.value).toBe(25_000);
    // Without a range the series ends today, so today is computed too (once: no second row).
    const all = await valuesOf(books.api_key, 'overdue_invoice_count');
    expect(all.map((v) => [v.metric_date, v.value])).toEqual([[today, 1]]);
  });

  it('a range that ends before today gets its last day computed as of that day; earlier days are left to the backfill', async () => {
    const books = await newBooks();
    const now = new Date();
    const due = new Date(now.getTime() - 10 * DAY);
    await receivable(books.api_key, 70_000, new Date(now.getTime() - 40 * DAY), due);
    const before = utcDay(new Date(due.getTime() - DAY)); // not yet overdue then
    const after = utcDay(new Date(due.getTime() + 2 * DAY));
    expect(await valuesOf(books.api_key, 'overdue_amount_cents', { from: before, to: before })).toMatchObject(
      [{ metric_date: before, value: 0 }],
    );
    expect(await valuesOf(books.api_key, 'overdue_amount_cents', { from: before, to: after })).toMatchObject([
      { metric_date: before, value: 0 },
      { metric_date: after, value: 70_000 },
    ]);
  });

  it('not for custom metrics, inactive presets, other time units or a range that starts after today', async () => {
    const books = await newBooks();
    const today = utcDay(new Date());
    const tomorrow = utcDay(new Date(Date.now() + DAY));
    const custom = await call(t.app, 'POST', '/api/metrics', {
      key: books.api_key,
      body: { uid: `own_${tag()}`, name: 'Own' },
    });
    expect(custom.status, custom.raw).toBe(200);
    expect(await valuesOf(books.api_key, custom.body.data.uid)).toEqual([]);
    expect(await valuesOf(books.api_key, 'dso_countback', { time_unit: 'month' })).toEqual([]);
    expect(await valuesOf(books.api_key, 'dso_countback', { from: tomorrow })).toEqual([]);
    const off = await call(t.app, 'PATCH', '/api/metrics/dso_countback', {
      key: books.api_key,
      body: { is_active: false },
    });
    expect(off.status, off.raw).toBe(200);
    expect(await valuesOf(books.api_key, 'dso_countback', { from: today, to: today })).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('kept fresh after invoice and payment changes', () => {
  it('a payment changes the value once the refresh ran; a burst of changes makes one refresh', async () => {
    const books = await newBooks();
    const now = new Date();
    const today = utcDay(now);
    const invoice = await receivable(
      books.api_key,
      100_000,
      new Date(now.getTime() - 40 * DAY),
      new Date(now.getTime() - 10 * DAY),
    );
    const overdue = async () =>
      (await valuesOf(books.api_key, 'overdue_amount_cents', { from: today, to: today }))[0]!.value;
    expect(await overdue()).toBe(100_000);

    // The invoice's creation asked for a refresh: one job, about 30 s out.
    const [job] = await refreshJobs(books.organization_uid);
    expect(job!.state).toBe('created');
    const delay = (new Date(job!.start_after).getTime() - new Date(job!.created_on).getTime()) / 1000;
    expect(delay).toBeGreaterThan(REFRESH_DELAY_SECONDS - 5);
    expect(delay).toBeLessThan(REFRESH_DELAY_SECONDS + 5);

    // Changes while it is pending join it.
    await pay(books.api_key, invoice.uid, 30_000);
    for (let i = 0; i < 5; i++) {
      await receivable(
        books.api_key,
        1_000,
        new Date(now.getTime() - 2 * DAY),
        new Date(now.getTime() + DAY),
      );
    }
    expect(await refreshJobs(books.organization_uid)).toHaveLength(1);
    // Stale until the refresh runs: the value read is the one computed before.
    expect(await overdue()).toBe(100_000);

    await refreshPresetValues(t.db, books.organization_uid, new Date());
    expect(await overdue()).toBe(70_000);
    const [count] = await valuesOf(books.api_key, 'aging_current_cents', { from: today, to: today });
    expect(count!.value).toBe(5_000);

    // The refresh started: the next change asks for another one.
    await pay(books.api_key, invoice.uid, 20_000);
    expect(await refreshJobs(books.organization_uid)).toHaveLength(2);
  });

  it('the refresh job runs through the workers', async () => {
    const books = await newBooks();
    const now = new Date();
    const today = utcDay(now);
    const invoice = await receivable(
      books.api_key,
      50_000,
      new Date(now.getTime() - 40 * DAY),
      new Date(now.getTime() - 10 * DAY),
    );
    expect((await valuesOf(books.api_key, 'overdue_amount_cents', { to: today }))[0]!.value).toBe(50_000);
    await pay(books.api_key, invoice.uid, 50_000);
    // The same job the change enqueued, without its delay.
    await t.deps.jobs.enqueue(t.db, METRIC_REFRESH_QUEUE, { organization_uid: books.organization_uid });
    await until(async () => {
      const [value] = await valuesOf(books.api_key, 'overdue_amount_cents', { from: today, to: today });
      return value?.value === 0;
    }, 'the refresh job to recompute today');
  });

  // PGlite runs one statement at a time: there, nothing is concurrent to order.
  it.runIf(engine === 'postgres')(
    'the refresh reads the invoices only after every change that relied on its mark committed',
    async () => {
      const books = await newBooks();
      const org = books.organization_uid;
      const today = utcDay(new Date());
      await t.db.transaction((tx) => markMetricsStale(tx, t.deps.jobs, org)); // the first change: marked
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let relied!: () => void;
      const hasRelied = new Promise<void>((resolve) => (relied = resolve));
      // A second change finds the mark, relies on it, and is slow to commit.
      const change = t.db.transaction(async (tx) => {
        await markMetricsStale(tx, t.deps.jobs, org);
        relied();
        await held;
        await tx.insert(invoices).values({
          organizationUid: org,
          invoiceType: 'ACCOUNTS_RECEIVABLE',
          invoiceNumber: `INV-${tag()}`,
          status: 'open',
          currency: 'USD',
          issueDate: new Date(Date.now() - 40 * DAY),
          dueDate: new Date(Date.now() - 10 * DAY),
          totalCents: 12_345,
          amountDueCents: 12_345,
          amountRemainingCents: 12_345,
        });
      });
      await hasRelied;
      let refreshed = false;
      const refresh = refreshPresetValues(t.db, org, new Date()).then(() => (refreshed = true));
      // The refresh's first step, clearing the mark, waits on the change's lock.
      await until(async () => {
        const waiting = await rawQuery<{ n: number }>(
          t.db,
          `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and query ilike 'update "metric_preset_states"%'`,
        );
        return waiting[0]!.n > 0;
      }, 'the refresh to wait for the change');
      expect(refreshed).toBe(false);
      release();
      await change;
      await refresh;
      // So it saw the change: the one job of the burst covers both changes.
      expect(await refreshJobs(org)).toHaveLength(1);
      const [value] = await rawQuery<{ value: number }>(
        t.db,
        `select value from metric_values where organization_uid = $1 and metric_uid = 'overdue_amount_cents' and metric_date = $2`,
        [org, today],
      );
      expect(value!.value).toBe(12_345);
    },
  );

  it('payable invoices and other organizations do not ask for a refresh', async () => {
    const books = await newBooks();
    const res = await call(t.app, 'POST', '/api/invoices', {
      key: books.api_key,
      body: {
        invoice_type: 'ACCOUNTS_PAYABLE',
        invoice_number: `BILL-${tag()}`,
        currency: 'USD',
        tax_cents: 5_000,
      },
    });
    expect(res.status, res.raw).toBe(201);
    expect(await refreshJobs(books.organization_uid)).toEqual([]);
    const before = (await refreshJobs(p.orgB.uid)).length;
    await receivable(p.orgA.admin.key, 1_000, new Date(), new Date(Date.now() + DAY));
    expect(await refreshJobs(p.orgB.uid)).toHaveLength(before);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('POST /api/metrics/compute', () => {
  const compute = (key: string, body: unknown = {}) =>
    call(t.app, 'POST', '/api/metrics/compute', { key, body });
  const NOW = new Date('2025-03-20T10:00:00Z');
  let books: Awaited<ReturnType<typeof newBooks>>;

  beforeAll(async () => {
    books = await newBooks();
    const [client] = await t.db
      .insert(parties)
      .values({ organizationUid: books.organization_uid, name: 'Client', role: 'client' })
      .returning();
    await t.db.insert(invoices).values({
      organizationUid: books.organization_uid,
      invoiceType: 'ACCOUNTS_RECEIVABLE',
      invoiceNumber: `INV-${tag()}`,
      status: 'open',
      currency: 'USD',
      issueDate: noon('2025-02-01'),
      dueDate: noon('2025-03-15'),
      totalCents: 40_000,
      amountDueCents: 40_000,
      amountRemainingCents: 40_000,
      clientPartyUid: client!.uid,
    });
  });

  it('computes today by default, as of now', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    const res = await compute(books.api_key);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({
      organization_uid: books.organization_uid,
      from: '2025-03-20',
      to: '2025-03-20',
      metric_uids: expect.arrayContaining(['overdue_amount_cents', 'client_overdue_amount_cents']),
      // 9 organization presets (CEI included: 40,000 became collectible) + 2 for the one client.
      values_written: 11,
      days: [{ metric_date: '2025-03-20', values_written: 11, skipped: [] }],
    });
    expect(res.body.data.metric_uids).toHaveLength(11);
  });

  it('backfills a range, each day as of that day, and a re-run replaces instead of adding', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    const body = { metric_uids: ['overdue_amount_cents'], from: '2025-03-14', to: '2025-03-17' };
    const res = await compute(books.api_key, body);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      from: '2025-03-14',
      to: '2025-03-17',
      metric_uids: ['overdue_amount_cents'],
    });
    expect(res.body.data.days.map((d: { metric_date: string }) => d.metric_date)).toEqual([
      '2025-03-14',
      '2025-03-15',
      '2025-03-16',
      '2025-03-17',
    ]);
    expect(res.body.data.values_written).toBe(4);
    const again = await compute(books.api_key, body);
    expect(again.status, again.raw).toBe(200);
    const values = await valuesOf(books.api_key, 'overdue_amount_cents', {
      from: '2025-03-14',
      to: '2025-03-17',
    });
    // Due 03-15: overdue from 03-16 on. One row per day after two runs.
    expect(values.map((v) => [v.metric_date, v.value])).toEqual([
      ['2025-03-14', 0],
      ['2025-03-15', 0],
      ['2025-03-16', 40_000],
      ['2025-03-17', 40_000],
    ]);
    // Only the metric asked for (read from the table: a read through the API would compute it).
    expect(await storedOn(books.organization_uid, '2025-03-14', 'overdue_invoice_count')).toBe(0);
  });

  it('`from` alone runs to today; `to` alone is that one day', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    const fromOnly = await compute(books.api_key, { metric_uids: ['dso_countback'], from: '2025-03-18' });
    expect(fromOnly.body.data).toMatchObject({ from: '2025-03-18', to: '2025-03-20', values_written: 3 });
    const toOnly = await compute(books.api_key, { metric_uids: ['dso_countback'], to: '2025-01-05' });
    expect(toOnly.body.data).toMatchObject({ from: '2025-01-05', to: '2025-01-05', values_written: 1 });
  });

  it('422 for a bad range, naming the field', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    const field = async (body: unknown) =>
      expectErrorBody(await compute(books.api_key, body), 422, 'validation_failed').errors?.[0]?.field;
    expect(await field({ from: '2025-03-10', to: '2025-03-09' })).toBe('from');
    expect(await field({ to: '2025-03-21' })).toBe('to'); // tomorrow has not begun
    expect(await field({ from: '2025-03-21' })).toBe('from');
    expect(await field({ from: '2025-02-01', to: '2025-03-20' })).toBe('from'); // 48 days: over 31
    expect(await field({ from: '2025-02-30' })).toBe('from');
    expect(await field({ to: 'yesterday' })).toBe('to');
    expect(await field({ metric_uids: [] })).toBe('metric_uids');
    expect(await field({ metric_uids: ['dso_countback', 'dso_countback'] })).toBe('metric_uids');
    expect(await field({ extra: 1 })).toBe('extra');
    // Nothing was written by any of them (read from the table: a read through the API computes).
    expect(await storedOn(books.organization_uid, '2025-03-09')).toBe(0);
  });

  it('422 for metrics that cannot be computed: unknown, posted (not a preset), inactive, another organization’s', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    const own = `own_${tag()}`;
    expect(
      (await call(t.app, 'POST', '/api/metrics', { key: books.api_key, body: { uid: own, name: 'Own' } }))
        .status,
    ).toBe(200);
    const foreign = `b_only_${tag()}`;
    expect(
      (
        await call(t.app, 'POST', '/api/metrics', {
          key: p.orgB.admin.key,
          body: { uid: foreign, name: 'B' },
        })
      ).status,
    ).toBe(200);
    const off = await newBooks();
    await call(t.app, 'PATCH', '/api/metrics/dso_countback', {
      key: off.api_key,
      body: { is_active: false },
    });
    const res = await compute(books.api_key, {
      metric_uids: ['overdue_amount_cents', 'no_such_metric', own, foreign],
    });
    const body = expectErrorBody(res, 422, 'validation_failed');
    expect(body.errors).toEqual([
      { field: 'metric_uids[1]', message: 'is not a metric of this organization' },
      { field: 'metric_uids[2]', message: expect.stringContaining('not a preset') },
      { field: 'metric_uids[3]', message: 'is not a metric of this organization' },
    ]);
    expect(
      expectErrorBody(await compute(off.api_key, { metric_uids: ['dso_countback'] }), 422).errors,
    ).toEqual([{ field: 'metric_uids[0]', message: 'is inactive' }]);
  });

  it('403 for a member, with nothing computed', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    expectErrorBody(await compute(p.orgA.member.key, { to: '2025-03-01' }), 403, 'forbidden');
    expect(await storedOn(p.orgA.uid, '2025-03-01')).toBe(0);
  });

  it("computes only the caller's organization", async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    const res = await compute(p.orgA.admin.key, { from: '2025-02-01', to: '2025-02-02' });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.organization_uid).toBe(p.orgA.uid);
    expect(await storedOn(p.orgB.uid, '2025-02-01')).toBe(0);
    expect(await storedOn(p.orgB.uid, '2025-02-02')).toBe(0);
    // Naming another organization is 403 (the common checks below); its own admin computes it.
    const b = await compute(p.orgB.admin.key, { organization_uid: p.orgB.uid, to: '2025-02-01' });
    expect(b.status, b.raw).toBe(200);
    expect(b.body.data.organization_uid).toBe(p.orgB.uid);
  });

  /** Values stored for the day (of one metric, or any), read from the table. */
  async function storedOn(organizationUid: string, day: string, metricUid?: string) {
    const [row] = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from metric_values
        where organization_uid = $1 and metric_date = $2 and ($3::text is null or metric_uid = $3)`,
      [organizationUid, day, metricUid ?? null],
    );
    return row!.n;
  }

  commonRouteChecks(
    'POST /api/metrics/compute',
    {
      method: 'POST',
      url: () => '/api/metrics/compute',
      body: () => ({ metric_uids: ['overdue_amount_cents'] }),
      scope: 'metrics:write',
      foreignOrganizationBody: ({ p }) => ({ organization_uid: p.orgB.uid }),
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('the daily job fills the days it missed', () => {
  /** An organization of its own with one receivable of 10,000 due on 2025-03-11. */
  async function dueOnMarch11() {
    const books = await newBooks();
    await t.db.insert(invoices).values({
      organizationUid: books.organization_uid,
      invoiceType: 'ACCOUNTS_RECEIVABLE',
      invoiceNumber: `INV-${tag()}`,
      status: 'open',
      currency: 'USD',
      issueDate: noon('2025-02-01'),
      dueDate: noon('2025-03-11'),
      totalCents: 10_000,
      amountDueCents: 10_000,
      amountRemainingCents: 10_000,
    });
    return books;
  }
  const stored = async (organizationUid: string, metricUid: string) =>
    rawQuery<{ day: string; value: number; n: number }>(
      t.db,
      `select metric_date::text as day, max(value) as value, count(*)::int as n from metric_values
        where organization_uid = $1 and metric_uid = $2 group by metric_date order by metric_date`,
      [organizationUid, metricUid],
    );
  const run = async (now: string) => {
    const errors: unknown[] = [];
    const summary = await runDailyPresetJob(t.db, new Date(now), (_org, error) => errors.push(error));
    expect(errors).toEqual([]);
    return summary;
  };

  it('computes exactly the missing days, each as of that day, and a second run adds nothing', async () => {
    const books = await dueOnMarch11();
    const org = books.organization_uid;
    // The first run for an organization with nothing stored: the day that just ended.
    const first = await run('2025-03-10T00:15:00Z');
    expect(first.metric_date).toBe('2025-03-09');
    expect((await stored(org, 'overdue_amount_cents')).map((r) => r.day)).toEqual(['2025-03-09']);

    // Down from 03-10 to 03-15: the run at 03-15 00:15 fills 03-10 … 03-14.
    expect(await daysToBackfill(t.db, org, '2025-03-14')).toEqual([
      '2025-03-10',
      '2025-03-11',
      '2025-03-12',
      '2025-03-13',
      '2025-03-14',
    ]);
    const second = await run('2025-03-15T00:15:00Z');
    expect(second.days_computed).toBeGreaterThanOrEqual(5);
    expect(await stored(org, 'overdue_amount_cents')).toEqual([
      { day: '2025-03-09', value: 0, n: 1 },
      { day: '2025-03-10', value: 0, n: 1 },
      { day: '2025-03-11', value: 0, n: 1 }, // due that day: not yet overdue
      { day: '2025-03-12', value: 10_000, n: 1 },
      { day: '2025-03-13', value: 10_000, n: 1 },
      { day: '2025-03-14', value: 10_000, n: 1 },
    ]);
    const aging = await stored(org, 'aging_1_30_cents');
    expect(aging.map((r) => [r.day, r.value])).toContainEqual(['2025-03-12', 10_000]);

    // Run again (a retry, or a second worker): nothing left to do, no duplicates.
    expect(await daysToBackfill(t.db, org, '2025-03-14')).toEqual([]);
    await run('2025-03-15T00:15:00Z');
    expect((await stored(org, 'overdue_amount_cents')).every((r) => r.n === 1)).toBe(true);
    expect(await stored(org, 'overdue_amount_cents')).toHaveLength(6);
  });

  it('before its first run with a mark, it starts from the latest stored day (recomputed)', async () => {
    const books = await dueOnMarch11();
    const org = books.organization_uid;
    // Values from an earlier computation (the CLI, a read, or the job before this mark existed).
    await computePresetValues(t.db, org, '2025-03-05');
    await computePresetValues(t.db, org, '2025-03-07');
    expect(await daysToBackfill(t.db, org, '2025-03-09')).toEqual(['2025-03-07', '2025-03-08', '2025-03-09']);
  });

  it(`fills at most ${MAX_BACKFILL_DAYS} days, the newest ones`, async () => {
    const books = await dueOnMarch11();
    await computePresetValues(t.db, books.organization_uid, '2020-01-01');
    const days = await daysToBackfill(t.db, books.organization_uid, '2025-03-09');
    expect(days).toHaveLength(MAX_BACKFILL_DAYS);
    expect(days.at(-1)).toBe('2025-03-09');
    expect(days[0]).toBe(
      utcDay(new Date(Date.parse('2025-03-09T00:00:00Z') - (MAX_BACKFILL_DAYS - 1) * DAY)),
    );
    // Gone again, so the daily runs of the next test do not fill those 400 days for real.
    await rawQuery(t.db, `delete from metric_values where organization_uid = $1`, [books.organization_uid]);
  });

  it('a day computed during that day is computed again once it has ended', async () => {
    const books = await dueOnMarch11();
    const org = books.organization_uid;
    await run('2025-03-10T00:15:00Z');
    // During 03-10 a read computed 03-10 so far.
    await computePresetValues(t.db, org, '2025-03-10');
    expect(await daysToBackfill(t.db, org, '2025-03-10')).toEqual(['2025-03-10']);
  });
});
