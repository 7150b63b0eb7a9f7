import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
/** A product of orgB: orgA's callers must never see or touch it. */
let foreignProduct: { uid: string; sku: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  foreignProduct = await createProduct(p.orgB.admin.key, { sku: `B-ONLY-${tag()}`, name: 'Foreign thing' });
});
afterAll(async () => t?.close());

const postProduct = (key: string, body: unknown) => call(t.app, 'POST', '/api/products', { key, body });
async function createProduct(key: string, body: Record<string, unknown>) {
  const res = await postProduct(key, {
    sku: `SKU-${tag()}`,
    name: 'Widget',
    context_type: 'PRODUCT',
    unit_price: 1250,
    currency: 'USD',
    ...body,
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const getProduct = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'GET', `/api/products/${uid}`, { key });
const patchProduct = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/products/${uid}`, { key, body });
const listProducts = (query: Record<string, string | number>, key = p.orgA.admin.key) =>
  call(t.app, 'GET', '/api/products', { key, query });

describe('POST /api/products', () => {
  it('adds a SKU to the catalog: 201 in the envelope, currency stored upper-case', async () => {
    const res = await postProduct(p.orgA.admin.key, {
      sku: 'CONSULT-HR',
      name: 'Consulting hour',
      context_type: 'PRODUCT',
      unit_price: 15000,
      currency: 'usd',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    expect(res.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      organization_uid: p.orgA.uid,
      sku: 'CONSULT-HR',
      name: 'Consulting hour',
      context_type: 'PRODUCT',
      unit_price: 15000,
      currency: 'USD',
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
  });

  it('409 for a SKU already in the organization; another organization may use the same SKU', async () => {
    const sku = `DUP-${tag()}`;
    await createProduct(p.orgA.admin.key, { sku });
    const again = await postProduct(p.orgA.admin.key, {
      sku,
      name: 'Other',
      context_type: 'DISCOUNT',
      unit_price: 1,
      currency: 'EUR',
    });
    const body = expectErrorBody(again, 409, 'already_exists');
    expect(body.message).toContain(sku);
    const elsewhere = await createProduct(p.orgB.admin.key, { sku });
    expect(elsewhere.organization_uid).toBe(p.orgB.uid);
    // The duplicate wrote nothing.
    const listed = (await listProducts({ q: sku })).body.data.items;
    expect(listed).toHaveLength(1);
    expect(listed[0].name).toBe('Widget');
  });

  it('422 unless currency is exactly 3 letters', async () => {
    for (const currency of ['US', 'USDD', 'U$D', '123', '', 'us ']) {
      const res = await postProduct(p.orgA.admin.key, {
        sku: `CUR-${tag()}`,
        name: 'x',
        context_type: 'PRODUCT',
        unit_price: 1,
        currency,
      });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toBe('currency');
    }
  });

  it('422 for a missing SKU or name, an unknown context_type, a negative or fractional unit_price', async () => {
    const base = { sku: `BAD-${tag()}`, name: 'x', context_type: 'PRODUCT', unit_price: 1, currency: 'USD' };
    const bad = [
      { ...base, sku: undefined },
      { ...base, sku: '' },
      { ...base, name: undefined },
      { ...base, context_type: 'SERVICE' },
      { ...base, unit_price: -1 },
      { ...base, unit_price: 1.5 },
      { ...base, unit_price: '100' },
    ];
    for (const body of bad)
      expectErrorBody(await postProduct(p.orgA.admin.key, body), 422, 'validation_failed');
  });

  commonRouteChecks(
    'POST /api/products',
    {
      method: 'POST',
      url: () => '/api/products',
      body: () => ({
        sku: `CHK-${tag()}`,
        name: 'x',
        context_type: 'PRODUCT',
        unit_price: 1,
        currency: 'USD',
      }),
      scope: 'invoices:write',
      foreignOrganizationBody: ({ p }) => ({
        sku: `CHK-${tag()}`,
        name: 'x',
        context_type: 'PRODUCT',
        unit_price: 1,
        currency: 'USD',
        organization_uid: p.orgB.uid,
      }),
    },
    () => ({ t, p }),
  );
});

describe('GET /api/products/{uid}', () => {
  it('returns the product as created', async () => {
    const created = await createProduct(p.orgA.admin.key, { context_type: 'DISCOUNT', unit_price: 500 });
    const res = await getProduct(created.uid);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data).toEqual(created);
  });

  it('400 for a uid that is not a uuid, 404 for an unknown one', async () => {
    expectErrorBody(await getProduct('nope'), 400, 'invalid_parameter');
    expectErrorBody(await getProduct(MISSING), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/products/{uid}',
    {
      method: 'GET',
      url: async ({ p }) => `/api/products/${(await createProduct(p.orgA.admin.key, {})).uid}`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/products/${foreignProduct.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('PATCH /api/products/{uid}', () => {
  it('changes only the sent fields', async () => {
    const before = await createProduct(p.orgA.admin.key, { name: 'Before' });
    const res = await patchProduct(before.uid, { unit_price: 999 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect({ ...res.body.data, updated_at: before.updated_at }).toEqual({ ...before, unit_price: 999 });
    const more = (
      await patchProduct(before.uid, { name: 'After', currency: 'eur', context_type: 'DISCOUNT' })
    ).body.data;
    expect({ ...more, updated_at: before.updated_at }).toEqual({
      ...before,
      unit_price: 999,
      name: 'After',
      currency: 'EUR',
      context_type: 'DISCOUNT',
    });
    expect((await getProduct(before.uid)).body.data).toEqual(more);
  });

  it('409 when the new SKU is taken in the organization, and nothing changes', async () => {
    const taken = await createProduct(p.orgA.admin.key, {});
    const mine = await createProduct(p.orgA.admin.key, {});
    expectErrorBody(await patchProduct(mine.uid, { sku: taken.sku, name: 'Renamed' }), 409, 'already_exists');
    expect((await getProduct(mine.uid)).body.data).toEqual(mine);
    // A SKU used only by another organization is free here.
    const res = await patchProduct(mine.uid, { sku: foreignProduct.sku });
    expect(res.status).toBe(200);
    expect(res.body.data.sku).toBe(foreignProduct.sku);
  });

  it('422 for a currency that is not 3 letters or a negative price; 400/404 for bad or unknown uids', async () => {
    const product = await createProduct(p.orgA.admin.key, {});
    expectErrorBody(await patchProduct(product.uid, { currency: 'EURO' }), 422, 'validation_failed');
    expectErrorBody(await patchProduct(product.uid, { currency: 'E1R' }), 422, 'validation_failed');
    expectErrorBody(await patchProduct(product.uid, { unit_price: -5 }), 422, 'validation_failed');
    expectErrorBody(await patchProduct(product.uid, { sku: '' }), 422, 'validation_failed');
    expectErrorBody(await patchProduct('nope', { name: 'x' }), 400, 'invalid_parameter');
    expectErrorBody(await patchProduct(MISSING, { name: 'x' }), 404, 'not_found');
    expect((await getProduct(product.uid)).body.data).toEqual(product);
  });

  it("another organization's product stays untouched", async () => {
    expectErrorBody(await patchProduct(foreignProduct.uid, { unit_price: 1 }), 404, 'not_found');
    expect((await getProduct(foreignProduct.uid, p.orgB.admin.key)).body.data.unit_price).toBe(1250);
  });

  commonRouteChecks(
    'PATCH /api/products/{uid}',
    {
      method: 'PATCH',
      url: async ({ p }) => `/api/products/${(await createProduct(p.orgA.admin.key, {})).uid}`,
      body: () => ({ name: 'Checked' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/products/${foreignProduct.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/products', () => {
  let run: string;
  beforeAll(async () => {
    run = tag();
    const key = p.orgA.admin.key;
    await createProduct(key, { sku: `HOUR-${run}`, name: 'Consulting Hour' });
    await createProduct(key, {
      sku: `DISC10-${run}`,
      name: `Loyalty ${run} 10% off`,
      context_type: 'DISCOUNT',
    });
    await createProduct(key, {
      sku: `DISC100-${run}`,
      name: `Loyalty ${run} 100 off`,
      context_type: 'DISCOUNT',
    });
    await createProduct(key, { sku: `A_B-${run}`, name: 'Underscored' });
    await createProduct(key, { sku: `AXB-${run}`, name: 'Not underscored' });
    await createProduct(p.orgB.admin.key, { sku: `HOUR-${run}`, name: 'Their hour' });
  });
  const skus = (res: { body: { data: { items: { sku: string }[] } } }) =>
    res.body.data.items.map((i) => i.sku).sort();

  it('q matches the SKU or the name case-insensitively, only within the organization', async () => {
    const bySku = await listProducts({ q: `hour-${run.toUpperCase()}` });
    expect(bySku.status).toBe(200);
    expect(bySku.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(bySku.body.data.items).toHaveLength(1);
    expect(bySku.body.data.items[0]).toMatchObject({ sku: `HOUR-${run}`, organization_uid: p.orgA.uid });
    expect(bySku.body.data._meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 1 });
    expect(skus(await listProducts({ q: `LOYALTY ${run}` }))).toEqual([`DISC10-${run}`, `DISC100-${run}`]);
  });

  it('LIKE wildcards in q are literal', async () => {
    expect(skus(await listProducts({ q: `${run} 10%` }))).toEqual([`DISC10-${run}`]);
    expect(skus(await listProducts({ q: `A_B-${run}` }))).toEqual([`A_B-${run}`]);
  });

  it('filters by context_type and pages', async () => {
    const discounts = (await listProducts({ q: run, context_type: 'DISCOUNT' })).body.data.items;
    expect(discounts.map((d: { sku: string }) => d.sku).sort()).toEqual([`DISC10-${run}`, `DISC100-${run}`]);
    const all = (await listProducts({ q: run, per_page: 100 })).body.data;
    expect(all._meta.total_items).toBe(5);
    const page = (await listProducts({ q: run, per_page: 2, page: 3 })).body.data;
    expect(page._meta).toEqual({ page: 3, per_page: 2, total_pages: 3, total_items: 5 });
    expect(page.items.map((i: { uid: string }) => i.uid)).toEqual([all.items[4].uid]);
  });

  it('400 for bad paging or an unknown context_type', async () => {
    expectErrorBody(await listProducts({ per_page: 101 }), 400, 'invalid_parameter');
    expectErrorBody(await listProducts({ page: 0 }), 400, 'invalid_parameter');
    expectErrorBody(await listProducts({ context_type: 'SERVICE' }), 400, 'invalid_parameter');
  });

  commonRouteChecks(
    'GET /api/products',
    {
      method: 'GET',
      url: () => '/api/products',
      scope: 'invoices:read',
      foreignOrganizationUrl: ({ p }) => `/api/products?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});
