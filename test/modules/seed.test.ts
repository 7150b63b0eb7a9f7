import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { seedOrganization } from '../../src/modules/seed/seed.service.ts';

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

const indexNames = async () =>
  (
    await rawQuery<{ name: string }>(
      t.db,
      `select indexname as name from pg_indexes where tablename = 'invoices' order by 1`,
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
});
