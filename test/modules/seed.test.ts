import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { SEED_RARE_WORD, seedOrganization } from '../../src/modules/seed/seed.service.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});

/** Organizations of the test's own: seeding adds to what an organization has, so none is shared. */
const ownPrincipals = (): Promise<Principals> => createPrincipals(t);
afterAll(async () => t?.close());

const indexNames = async (table = 'invoices') =>
  (
    await rawQuery<{ name: string }>(
      t.db,
      `select indexname as name from pg_indexes where tablename = $1 order by 1`,
      [table],
    )
  ).map((r) => r.name);

const countsMatch = async (org: string) => {
  const kept = await rawQuery<{ invoice_type: string; status: string; n: number }>(
    t.db,
    `select invoice_type, status, n::int as n from invoice_counts where organization_uid = $1 and n > 0 order by 1, 2`,
    [org],
  );
  const real = await rawQuery<{ invoice_type: string; status: string; n: number }>(
    t.db,
    `select invoice_type, status, count(*)::int as n from invoices where organization_uid = $1 group by 1, 2 order by 1, 2`,
    [org],
  );
  expect(kept).toEqual(real);
};

describe('remit seed', () => {
  it('is deterministic: the same call writes the same rows, a larger one only adds', async () => {
    const p = await ownPrincipals();
    const first = await seedOrganization(t.db, {
      organizationUid: p.orgB.uid,
      invoices: 200,
      apRatio: 0.5,
      parties: 20,
    });
    expect(first.invoices).toBe(200);
    const uids = (
      await rawQuery<{ uid: string }>(
        t.db,
        `select uid from invoices where organization_uid = $1 order by 1`,
        [p.orgB.uid],
      )
    ).map((r) => r.uid);
    const again = await seedOrganization(t.db, {
      organizationUid: p.orgB.uid,
      invoices: 200,
      apRatio: 0.5,
      parties: 20,
    });
    expect(again.invoices).toBe(200);
    const more = await seedOrganization(t.db, {
      organizationUid: p.orgB.uid,
      invoices: 300,
      apRatio: 0.5,
      parties: 20,
    });
    expect(more.invoices).toBe(300);
    const after = (
      await rawQuery<{ uid: string }>(
        t.db,
        `select uid from invoices where organization_uid = $1 order by 1`,
        [p.orgB.uid],
      )
    ).map((r) => r.uid);
    expect(after).toEqual(expect.arrayContaining(uids));
    await countsMatch(p.orgB.uid);
  });

  it('seeded invoices are real invoices: listed with exact totals', async () => {
    const p = await ownPrincipals();
    await seedOrganization(t.db, { organizationUid: p.orgB.uid, invoices: 200, apRatio: 0.5, parties: 20 });
    const res = await call(t.app, 'GET', `/api/organization/${p.orgB.uid}/ap-invoices`, {
      key: p.orgB.admin.key,
      query: { view: 'list', per_page: 5 },
    });
    expect(res.status).toBe(200);
    const [row] = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from invoices where organization_uid = $1 and invoice_type = 'ACCOUNTS_PAYABLE'`,
      [p.orgB.uid],
    );
    expect(res.body._meta.total_items).toBe(row!.n);
  });

  it('the bulk path puts every index back and recounts, even when an invoice number clashes', async () => {
    const p = await ownPrincipals();
    const before = await indexNames();
    // A receivable number the seed also generates, under another uid.
    const clash = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgA.admin.key,
      body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: 'INV-0000002', currency: 'USD' },
    });
    expect(clash.status).toBe(201);
    const result = await seedOrganization(t.db, {
      organizationUid: p.orgA.uid,
      invoices: 120,
      apRatio: 0.5,
      parties: 10,
      bulkThreshold: 100,
    });
    expect(result.invoices).toBeGreaterThanOrEqual(120);
    expect(await indexNames()).toEqual(before);
    const [trigger] = await rawQuery<{ enabled: string }>(
      t.db,
      `select tgenabled as enabled from pg_trigger where tgname = 'invoices_count_insert_delete'`,
    );
    expect(trigger!.enabled).toBe('O');
    await countsMatch(p.orgA.uid);
    await countsMatch(p.orgB.uid);
  });

  it('--tasks: work tasks of type task from the first admin, deterministic, a larger count only adds', async () => {
    const p = await ownPrincipals();
    const org = p.orgB.uid;
    const tasksOf = async () =>
      rawQuery<{
        uid: string;
        type: string;
        title: string;
        description: string;
        status: string;
        priority: string;
        origin_type: string;
        origin_user_uid: string;
        created_at: string;
      }>(t.db, `select * from work_tasks where organization_uid = $1 order by uid`, [org]);
    const first = await seedOrganization(t.db, {
      organizationUid: org,
      invoices: 300,
      apRatio: 0.5,
      parties: 20,
      tasks: 40,
    });
    expect(first.tasks).toBe(40);
    const rows = await tasksOf();
    expect(rows).toHaveLength(40);
    for (const row of rows) {
      expect(row.type).toBe('task');
      expect(row.origin_type).toBe('user');
      expect(row.origin_user_uid).toBe(p.orgB.admin.userUid);
      expect(['todo', 'in_progress', 'in_review', 'done', 'canceled']).toContain(row.status);
      expect(['urgent', 'high', 'medium', 'low']).toContain(row.priority);
      expect(row.title.length).toBeGreaterThan(10);
      // Every description names a seeded client and its open invoices (the bench's broad search word).
      expect(row.description).toMatch(/^\S+ \S+ \d+ has \d+ open invoices?; oldest due \d{4}-\d{2}-\d{2}\./);
    }
    expect(new Set(rows.map((r) => r.status)).size).toBe(5);

    const again = await seedOrganization(t.db, {
      organizationUid: org,
      invoices: 300,
      apRatio: 0.5,
      parties: 20,
      tasks: 40,
    });
    expect(again.tasks).toBe(40);
    expect(await tasksOf()).toEqual(rows);
    const more = await seedOrganization(t.db, {
      organizationUid: org,
      invoices: 300,
      apRatio: 0.5,
      parties: 20,
      tasks: 60,
    });
    expect(more.tasks).toBe(60);
    const after = await tasksOf();
    expect(after).toHaveLength(60);
    expect(after).toEqual(expect.arrayContaining(rows));

    // Real tasks: the API shows them.
    const res = await call(t.app, 'GET', `/api/work-tasks/${rows[0]!.uid}`, { key: p.orgB.admin.key });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.title).toBe(rows[0]!.title);
  });

  it('puts the rare word in 0.2 % of the party names, and so of the invoice customers', async () => {
    const p = await ownPrincipals();
    const org = p.orgB.uid;
    const result = await seedOrganization(t.db, {
      organizationUid: org,
      invoices: 300,
      apRatio: 0.5,
      parties: 2000,
    });
    expect(result.parties).toBe(2000);
    const [parties] = await rawQuery<{ rare: number; clients: number }>(
      t.db,
      `select count(*) filter (where name ilike $2)::int as rare,
              count(*) filter (where name ilike $2 and role = 'client')::int as clients
         from parties where organization_uid = $1 and name ~ ' [0-9]+$'`,
      [org, `%${SEED_RARE_WORD}%`],
    );
    // Positions 250, 751, 1250 and 1751: two clients, two vendors.
    expect(parties).toEqual({ rare: 4, clients: 2 });
  });

  it('the bulk path rebuilds the indexes of parties and work tasks too', async () => {
    const p = await ownPrincipals();
    const before = { parties: await indexNames('parties'), tasks: await indexNames('work_tasks') };
    const result = await seedOrganization(t.db, {
      organizationUid: p.orgA.uid,
      invoices: 150,
      apRatio: 0.5,
      parties: 140,
      tasks: 130,
      bulkThreshold: 100,
    });
    expect(result.parties).toBe(140);
    expect(result.tasks).toBe(130);
    expect(await indexNames('parties')).toEqual(before.parties);
    expect(await indexNames('work_tasks')).toEqual(before.tasks);
    expect(before.tasks).toContain('work_tasks_title_trgm_idx');
  });
});
