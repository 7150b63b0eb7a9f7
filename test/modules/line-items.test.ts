import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
/** Catalog of orgA by SKU. */
const catalog: Record<string, { uid: string; name: string; unit_price: number; context_type: string }> = {};
let foreignInvoice: string;
let foreignLine: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => crypto.randomBytes(4).toString('hex');

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const product = async (key: string, sku: string, name: string, context_type: string, unit_price: number) =>
    post(key, '/api/products', { sku, name, context_type, unit_price, currency: 'USD' });
  for (const [sku, name, type, price] of [
    ['WIDGET', 'Widget', 'PRODUCT', 1250],
    ['HOUR', 'Consulting hour', 'PRODUCT', 15000],
    ['FREE', 'Free sample', 'PRODUCT', 0],
    ['LOYAL', 'Loyalty discount', 'DISCOUNT', 500],
    ['PROMO', 'Promotion', 'DISCOUNT', 2000],
  ] as const) {
    catalog[sku] = await product(p.orgA.admin.key, sku, name, type, price);
  }
  await post(p.orgA.admin.key, '/api/products', {
    sku: 'EU-ITEM',
    name: 'Priced in euros',
    context_type: 'PRODUCT',
    unit_price: 900,
    currency: 'EUR',
  });
  await product(p.orgB.admin.key, 'B-ONLY', 'Only in B', 'PRODUCT', 100);
  await product(p.orgB.admin.key, 'WIDGET', 'B widget', 'PRODUCT', 1);
  const inv = await post(p.orgB.admin.key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: 'B-1',
    currency: 'USD',
    line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET' }],
  });
  foreignInvoice = inv.uid;
  foreignLine = inv.line_items[0].uid;
});
afterAll(async () => t?.close());

async function post(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const newInvoice = (body: Record<string, unknown> = {}) =>
  post(p.orgA.admin.key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: `INV-${tag()}`,
    currency: 'USD',
    status: 'open',
    ...body,
  });
const getInvoice = async (uid: string) =>
  (await call(t.app, 'GET', `/api/invoices/${uid}`, { key: p.orgA.admin.key })).body.data;
const addLines = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'POST', `/api/invoices/${uid}/line_items`, { key, body });
const putLines = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PUT', `/api/invoices/${uid}/line_items`, { key, body });

/** The derived money of CONTRACT §4, from the invoice's own lines. */
function expectTotals(
  inv: Record<string, number> & { line_items: { context_type: string; line_total: number }[] },
) {
  const sum = (type: string) =>
    inv.line_items.filter((l) => l.context_type === type).reduce((s, l) => s + l.line_total, 0);
  const subtotal = sum('PRODUCT');
  const discount = sum('DISCOUNT');
  const total = subtotal - discount + inv.tax_cents!;
  expect({
    subtotal_cents: inv.subtotal_cents,
    discount_cents: inv.discount_cents,
    total_cents: inv.total_cents,
    total: inv.total,
    amount_due_cents: inv.amount_due_cents,
    amount_remaining_cents: inv.amount_remaining_cents,
  }).toEqual({
    subtotal_cents: subtotal,
    discount_cents: discount,
    total_cents: total,
    total,
    amount_due_cents: total - inv.pre_payment_credit_notes_cents!,
    amount_remaining_cents: total - inv.pre_payment_credit_notes_cents! - inv.amount_paid_cents!,
  });
}

/** What a failed write must leave behind: the invoice exactly as it was (lines, totals, revision). */
async function expectUnchanged(before: { uid: string }) {
  expect(await getInvoice(before.uid)).toEqual(before);
}

describe('POST /api/invoices/{uid}/line_items', () => {
  it('object in → one line item out (200), resolved from the catalog; totals recomputed', async () => {
    const inv = await newInvoice({ tax_cents: 700 });
    const res = await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET', quantity: 3 });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: expect.any(String) });
    expect(Array.isArray(res.body.data)).toBe(false);
    expect(res.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      invoice_uid: inv.uid,
      context_type_uid: catalog.WIDGET!.uid,
      context_type: 'PRODUCT',
      context_name: 'Widget',
      sku: 'WIDGET',
      currency: 'USD',
      quantity: 3,
      unit_price: 1250,
      line_total: 3750,
    });
    const after = await getInvoice(inv.uid);
    expect(after.line_items).toEqual([res.body.data]);
    expect(after).toMatchObject({
      subtotal_cents: 3750,
      discount_cents: 0,
      tax_cents: 700,
      total_cents: 4450,
    });
    expect(after.amount_remaining_cents).toBe(4450);
    expectTotals(after);
  });

  it('quantity defaults to 1; unit_price overrides the catalog price; 0 is a valid quantity', async () => {
    const inv = await newInvoice();
    const one = (await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'HOUR' })).body.data;
    expect(one).toMatchObject({ quantity: 1, unit_price: 15000, line_total: 15000 });
    const override = (
      await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'HOUR', quantity: 2, unit_price: 9000 })
    ).body.data;
    expect(override).toMatchObject({
      quantity: 2,
      unit_price: 9000,
      line_total: 18000,
      context_name: 'Consulting hour',
    });
    const zero = (await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET', quantity: 0 })).body.data;
    expect(zero).toMatchObject({ quantity: 0, unit_price: 1250, line_total: 0 });
    const free = (await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET', unit_price: 0 })).body
      .data;
    expect(free).toMatchObject({ unit_price: 0, line_total: 0 });
    const after = await getInvoice(inv.uid);
    expect(after.subtotal_cents).toBe(33000);
    expectTotals(after);
  });

  it('a change that would make the total negative is refused (a credit note owes money back), the invoice untouched', async () => {
    const inv = await newInvoice();
    expect((await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET' })).status).toBe(200);
    const before = await getInvoice(inv.uid);
    const refused = await addLines(inv.uid, { context_type: 'DISCOUNT', sku: 'PROMO' });
    expectErrorBody(refused, 422, 'validation_failed');
    expect(refused.body.errors[0]).toMatchObject({ field: 'line_items' });
    expect(refused.body.errors[0].message).toMatch(/negative .*credit note/);
    expect(await getInvoice(inv.uid)).toEqual(before);
    // Created with it, receivable or payable: refused too, nothing written.
    for (const invoice_type of ['ACCOUNTS_RECEIVABLE', 'ACCOUNTS_PAYABLE']) {
      const number = `NEG-${tag()}`;
      const created = await call(t.app, 'POST', '/api/invoices', {
        key: p.orgA.admin.key,
        body: {
          invoice_type,
          invoice_number: number,
          currency: 'USD',
          line_items: [{ context_type: 'DISCOUNT', sku: 'LOYAL' }],
        },
      });
      expectErrorBody(created, 422, 'validation_failed');
    }
    // A discount up to the products' amount is fine: a total of zero.
    expect((await addLines(inv.uid, { context_type: 'DISCOUNT', sku: 'LOYAL' })).status).toBe(200);
  });

  it('array in → array out (200), in the order sent, and kept in that order on the invoice', async () => {
    const inv = await newInvoice({ tax_cents: 100, pre_payment_credit_notes_cents: 50 });
    const batch = [
      { context_type: 'PRODUCT', sku: 'HOUR', quantity: 2 },
      { context_type: 'DISCOUNT', sku: 'LOYAL' },
      { context_type: 'PRODUCT', sku: 'WIDGET', quantity: 4, unit_price: 1000 },
      { context_type: 'DISCOUNT', sku: 'PROMO', quantity: 2 },
      { context_type: 'PRODUCT', sku: 'FREE', quantity: 9 },
    ];
    const res = await addLines(inv.uid, batch);
    expect(res.status, res.raw).toBe(200);
    expect(Array.isArray(res.body.data)).toBe(true);
    expect(res.body.data.map((l: { sku: string }) => l.sku)).toEqual([
      'HOUR',
      'LOYAL',
      'WIDGET',
      'PROMO',
      'FREE',
    ]);
    expect(res.body.data.map((l: { line_total: number }) => l.line_total)).toEqual([
      30000, 500, 4000, 4000, 0,
    ]);
    expect(res.body.data[1]).toMatchObject({
      context_type: 'DISCOUNT',
      context_type_uid: catalog.LOYAL!.uid,
      context_name: 'Loyalty discount',
    });
    const after = await getInvoice(inv.uid);
    expect(after.line_items).toEqual(res.body.data);
    // subtotal 34000, discount 4500, total 34000 − 4500 + 100, due total − 50.
    expect(after).toMatchObject({
      subtotal_cents: 34000,
      discount_cents: 4500,
      total_cents: 29600,
      amount_due_cents: 29550,
      amount_remaining_cents: 29550,
    });
    expectTotals(after);

    const single = await addLines(inv.uid, [{ context_type: 'PRODUCT', sku: 'WIDGET' }]);
    expect(single.status).toBe(200);
    expect(Array.isArray(single.body.data)).toBe(true);
    expect(single.body.data).toHaveLength(1);
  });

  it('a batch of 100 is accepted, 101 is refused (422) and nothing is written', async () => {
    const inv = await newInvoice();
    const item = { context_type: 'PRODUCT', sku: 'WIDGET' };
    expectErrorBody(
      await addLines(
        inv.uid,
        Array.from({ length: 101 }, () => item),
      ),
      422,
      'validation_failed',
    );
    await expectUnchanged(inv);
    const res = await addLines(
      inv.uid,
      Array.from({ length: 100 }, () => item),
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(100);
    expect((await getInvoice(inv.uid)).subtotal_cents).toBe(125000);
    expectErrorBody(await addLines(inv.uid, []), 422, 'validation_failed');
  });

  it('422 for a quantity that is negative or not an integer, or a bad context_type, sku, price or currency', async () => {
    const inv = await newInvoice();
    const ok = { context_type: 'PRODUCT', sku: 'WIDGET' };
    const bad = [
      { ...ok, quantity: -1 },
      { ...ok, quantity: 1.5 },
      { ...ok, quantity: '2' },
      { ...ok, context_type: 'SERVICE' },
      { sku: 'WIDGET' },
      { context_type: 'PRODUCT' },
      { ...ok, sku: '' },
      { ...ok, unit_price: -1 },
      { ...ok, unit_price: 12.5 },
      { ...ok, currency: 'US' },
      { ...ok, currency: 'USDD' },
    ];
    for (const body of bad) {
      expectErrorBody(await addLines(inv.uid, body), 422, 'validation_failed');
      expectErrorBody(await addLines(inv.uid, [ok, body]), 422, 'validation_failed');
    }
    expectErrorBody(await addLines(inv.uid, JSON.stringify('WIDGET')), 422, 'validation_failed');
    await expectUnchanged(inv);
  });

  it('422 for an unknown SKU, a SKU that exists only in another organization, or the wrong context_type', async () => {
    const inv = await newInvoice();
    await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'HOUR' });
    const before = await getInvoice(inv.uid);
    const unknown = expectErrorBody(await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'NOPE' }), 422);
    expect(unknown.code).toBe('validation_failed');
    expect(unknown.errors?.[0]?.field).toContain('sku');
    expectErrorBody(
      await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'B-ONLY' }),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'widget' }),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await addLines(inv.uid, { context_type: 'DISCOUNT', sku: 'WIDGET' }),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET', currency: 'EUR' }),
      422,
    );
    await expectUnchanged(before);
  });

  it('a catalog price in another currency is not copied: 422 unless unit_price is sent', async () => {
    const inv = await newInvoice();
    const body = expectErrorBody(await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'EU-ITEM' }), 422);
    expect(body.errors?.[0]?.field).toBe('unit_price');
    await expectUnchanged(inv);
    const res = await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'EU-ITEM', unit_price: 1000 });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      currency: 'USD',
      unit_price: 1000,
      context_name: 'Priced in euros',
    });
  });

  it('amounts stay exact: a line or an invoice over the one maximum (1e15 cents) is 422, not a 500', async () => {
    const inv = await newInvoice();
    const huge = { context_type: 'PRODUCT', sku: 'WIDGET', quantity: 1_000_000_000, unit_price: 1e15 };
    expect(expectErrorBody(await addLines(inv.uid, huge), 422, 'validation_failed').errors?.[0]?.field).toBe(
      'quantity',
    );
    await expectUnchanged(inv);
    const over = { context_type: 'PRODUCT', sku: 'WIDGET', unit_price: 1e15 + 1 };
    expect(expectErrorBody(await addLines(inv.uid, over), 422, 'validation_failed').errors?.[0]?.field).toBe(
      'unit_price',
    );
    const half = { context_type: 'PRODUCT', sku: 'WIDGET', unit_price: 5e14 };
    expect((await addLines(inv.uid, [half, half])).status).toBe(200);
    const full = await getInvoice(inv.uid);
    expect(full.subtotal_cents).toBe(1e15);
    expectErrorBody(
      await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET' }),
      422,
      'validation_failed',
    );
    expect(await getInvoice(inv.uid)).toEqual(full);
    const first = full.line_items[0];
    expectErrorBody(await putLines(inv.uid, { uid: first.uid, quantity: 3 }), 422, 'validation_failed');
    expect(await getInvoice(inv.uid)).toEqual(full);
  });

  it('one maximum for every amount: a maximal invoice takes its whole payment, refund and credit note', async () => {
    const max = { context_type: 'PRODUCT', sku: 'WIDGET', unit_price: 1e15 };
    const money = (url: string, body: unknown) => call(t.app, 'POST', url, { key: p.orgA.admin.key, body });
    const inv = await newInvoice({ line_items: [max] });
    expect(inv.total_cents).toBe(1e15);
    // Over the maximum: 422 on the amount, as for any field.
    for (const [url, body] of [
      [`/api/invoices/${inv.uid}/payments`, { amount_cents: 1e15 + 1 }],
      [`/api/invoices/${inv.uid}/credit-notes`, { amount_cents: 1e15 + 1, reason: 'duplicate' }],
    ] as const) {
      expect(expectErrorBody(await money(url, body), 422, 'validation_failed').errors?.[0]?.field).toBe(
        'amount_cents',
      );
    }
    // A first payment, then the last one of what is left (over the old 1e13 cap): paid.
    expect((await money(`/api/invoices/${inv.uid}/payments`, { amount_cents: 1 })).status).toBe(201);
    const last = await money(`/api/invoices/${inv.uid}/payments`, { amount_cents: 1e15 - 1 });
    expect(last.status, last.raw).toBe(201);
    const paid = await getInvoice(inv.uid);
    expect(paid).toMatchObject({ status: 'paid', amount_paid_cents: 1e15, amount_remaining_cents: 0 });
    // Its refund in full, then a credit note of the whole amount.
    const payments = await call(t.app, 'GET', `/api/invoices/${inv.uid}/payments`, { key: p.orgA.admin.key });
    const lastUid = payments.body.data.items.at(-1).uid;
    const refund = await money(`/api/invoices/${inv.uid}/payments/${lastUid}/refund`, {
      amount_cents: 1e15 - 1,
      reason: 'returned',
    });
    expect(refund.status, refund.raw).toBe(201);
    const other = await newInvoice({ line_items: [max] });
    const note = await money(`/api/invoices/${other.uid}/credit-notes`, {
      amount_cents: 1e15,
      reason: 'duplicate',
    });
    expect(note.status, note.raw).toBe(201);
    expect(note.body.data.invoice.amount_remaining_cents).toBe(0);
  });

  it('one bad item in a batch refuses the whole batch: nothing written, totals unchanged', async () => {
    const inv = await newInvoice({ tax_cents: 300 });
    await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET', quantity: 2 });
    const before = await getInvoice(inv.uid);
    const good = { context_type: 'PRODUCT', sku: 'HOUR' };
    for (const bad of [
      { context_type: 'PRODUCT', sku: 'B-ONLY' },
      { context_type: 'PRODUCT', sku: 'NOPE' },
      { context_type: 'DISCOUNT', sku: 'HOUR' },
      { context_type: 'PRODUCT', sku: 'HOUR', quantity: -1 },
    ]) {
      const res = await addLines(inv.uid, [good, good, bad, good]);
      expectErrorBody(res, 422, 'validation_failed');
      await expectUnchanged(before);
    }
    const body = expectErrorBody(
      await addLines(inv.uid, [
        good,
        { context_type: 'PRODUCT', sku: 'NOPE' },
        good,
        { context_type: 'PRODUCT', sku: 'NOPE2' },
      ]),
      422,
    );
    // Every bad item is named, by its index in the batch.
    expect(body.errors?.map((e) => e.field)).toEqual(['[1].sku', '[3].sku']);
    await expectUnchanged(before);
  });

  it('a schema error in one item of a batch names that field by index, on POST and PUT', async () => {
    const inv = await newInvoice();
    await addLines(inv.uid, { context_type: 'PRODUCT', sku: 'WIDGET' });
    const before = await getInvoice(inv.uid);
    const good = { context_type: 'PRODUCT', sku: 'HOUR' };
    const res = await addLines(inv.uid, [good, good, { ...good, quantity: -1 }, { ...good, nope: 1 }]);
    const body = expectErrorBody(res, 422, 'validation_failed');
    expect(body.errors?.map((e) => e.field)).toContain('[2].quantity');
    expect(body.errors?.find((e) => e.field === '[2].quantity')?.message).toMatch(/integer/);
    expect(JSON.stringify(body)).not.toContain('must be an object or an array');
    // The single item keeps its own field names; PUT's batch names its items the same way.
    const single = expectErrorBody(
      await addLines(inv.uid, { ...good, quantity: 1.5 }),
      422,
      'validation_failed',
    );
    expect(single.errors?.map((e) => e.field)).toEqual(['quantity']);
    const uid = before.line_items[0].uid;
    const put = expectErrorBody(
      await putLines(inv.uid, [{ uid }, { uid, unit_price: 'x' }]),
      422,
      'validation_failed',
    );
    expect(put.errors?.map((e) => e.field)).toEqual(['[1].unit_price']);
    // Neither an object nor an array: the union as a whole.
    const neither = expectErrorBody(await addLines(inv.uid, 5), 422, 'validation_failed');
    expect(neither.errors?.[0]?.message).toContain('an object or an array');
    await expectUnchanged(before);
  });

  it('400 for a bad uuid, 404 for an unknown invoice', async () => {
    const item = { context_type: 'PRODUCT', sku: 'WIDGET' };
    expectErrorBody(await addLines('nope', item), 400, 'invalid_parameter');
    expectErrorBody(await addLines(MISSING, item), 404, 'not_found');
  });

  it("another organization's invoice is 404 and gets no lines", async () => {
    expectErrorBody(
      await addLines(foreignInvoice, { context_type: 'PRODUCT', sku: 'WIDGET' }),
      404,
      'not_found',
    );
    const theirs = await call(t.app, 'GET', `/api/invoices/${foreignInvoice}`, { key: p.orgB.admin.key });
    expect(theirs.body.data.line_items).toHaveLength(1);
  });

  commonRouteChecks(
    'POST /api/invoices/{uid}/line_items',
    {
      method: 'POST',
      url: async () => `/api/invoices/${(await newInvoice()).uid}/line_items`,
      body: () => ({ context_type: 'PRODUCT', sku: 'WIDGET' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/line_items`,
    },
    () => ({ t, p }),
  );
});

describe('PUT /api/invoices/{uid}/line_items', () => {
  /** An invoice with HOUR ×2 (price overridden to 12000), WIDGET ×1 and LOYAL ×1. */
  async function withLines() {
    const inv = await newInvoice({
      tax_cents: 1000,
      line_items: [
        { context_type: 'PRODUCT', sku: 'HOUR', quantity: 2, unit_price: 12000 },
        { context_type: 'PRODUCT', sku: 'WIDGET' },
        { context_type: 'DISCOUNT', sku: 'LOYAL' },
      ],
    });
    expect(inv.subtotal_cents).toBe(25250);
    return inv;
  }

  it('object in → object out (200): only the sent fields change; line and invoice totals follow', async () => {
    const inv = await withLines();
    const [hour, widget, loyal] = inv.line_items;
    const res = await putLines(inv.uid, { uid: hour.uid, quantity: 5 });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(Array.isArray(res.body.data)).toBe(false);
    // The overridden price stays: only quantity was sent.
    expect(res.body.data).toEqual({ ...hour, quantity: 5, line_total: 60000 });
    const after = await getInvoice(inv.uid);
    expect(after.line_items).toEqual([res.body.data, widget, loyal]);
    expect(after).toMatchObject({ subtotal_cents: 61250, discount_cents: 500, total_cents: 61750 });
    expectTotals(after);

    const priced = (await putLines(inv.uid, { uid: widget.uid, unit_price: 2000 })).body.data;
    expect(priced).toEqual({ ...widget, unit_price: 2000, line_total: 2000 });
    const zero = (await putLines(inv.uid, { uid: loyal.uid, quantity: 0 })).body.data;
    expect(zero).toEqual({ ...loyal, quantity: 0, line_total: 0 });
    const final = await getInvoice(inv.uid);
    expect(final).toMatchObject({ subtotal_cents: 62000, discount_cents: 0, total_cents: 63000 });
    expectTotals(final);
  });

  it('sending the same SKU again keeps an overridden price', async () => {
    const inv = await withLines();
    const hour = inv.line_items[0];
    const res = await putLines(inv.uid, { uid: hour.uid, sku: 'HOUR', quantity: 3 });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ ...hour, quantity: 3, line_total: 36000 });
  });

  it('a changed SKU is resolved again: product uid, name, catalog price (unless a price is sent)', async () => {
    const inv = await withLines();
    const [hour, widget] = inv.line_items;
    const moved = (await putLines(inv.uid, { uid: hour.uid, sku: 'WIDGET' })).body.data;
    expect(moved).toEqual({
      ...hour,
      sku: 'WIDGET',
      context_type_uid: catalog.WIDGET!.uid,
      context_name: 'Widget',
      unit_price: 1250,
      quantity: 2,
      line_total: 2500,
    });
    const priced = (await putLines(inv.uid, { uid: widget.uid, sku: 'HOUR', unit_price: 100, quantity: 7 }))
      .body.data;
    expect(priced).toEqual({
      ...widget,
      sku: 'HOUR',
      context_type_uid: catalog.HOUR!.uid,
      context_name: 'Consulting hour',
      unit_price: 100,
      quantity: 7,
      line_total: 700,
    });
    const after = await getInvoice(inv.uid);
    expect(after.subtotal_cents).toBe(3200);
    expectTotals(after);
  });

  it('a SKU of the other kind moves the line to that kind (context_type follows the SKU)', async () => {
    const inv = await withLines();
    const widget = inv.line_items[1];
    const res = await putLines(inv.uid, { uid: widget.uid, sku: 'PROMO' });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      context_type: 'DISCOUNT',
      context_type_uid: catalog.PROMO!.uid,
      line_total: 2000,
    });
    const after = await getInvoice(inv.uid);
    expect(after).toMatchObject({ subtotal_cents: 24000, discount_cents: 2500 });
    expectTotals(after);
    // Stating a kind that contradicts the SKU is refused.
    expectErrorBody(await putLines(inv.uid, { uid: widget.uid, sku: 'HOUR', context_type: 'DISCOUNT' }), 422);
    expectErrorBody(
      await putLines(inv.uid, { uid: widget.uid, context_type: 'PRODUCT' }),
      422,
      'validation_failed',
    );
    expect(await getInvoice(inv.uid)).toEqual(after);
  });

  it('array in → array out; all or nothing', async () => {
    const inv = await withLines();
    const [hour, widget, loyal] = inv.line_items;
    const res = await putLines(inv.uid, [
      { uid: loyal.uid, quantity: 2 },
      { uid: hour.uid, unit_price: 10000 },
    ]);
    expect(res.status, res.raw).toBe(200);
    expect(Array.isArray(res.body.data)).toBe(true);
    expect(res.body.data).toEqual([
      { ...loyal, quantity: 2, line_total: 1000 },
      { ...hour, unit_price: 10000, line_total: 20000 },
    ]);
    const before = await getInvoice(inv.uid);
    expect(before).toMatchObject({ subtotal_cents: 21250, discount_cents: 1000 });
    expectTotals(before);

    for (const batch of [
      [
        { uid: hour.uid, quantity: 9 },
        { uid: widget.uid, sku: 'B-ONLY' },
      ],
      [
        { uid: hour.uid, quantity: 9 },
        { uid: widget.uid, sku: 'NOPE' },
      ],
      [
        { uid: hour.uid, quantity: 9 },
        { uid: crypto.randomUUID(), quantity: 1 },
      ],
      [
        { uid: hour.uid, quantity: 9 },
        { uid: foreignLine, quantity: 1 },
      ],
      [
        { uid: hour.uid, quantity: 9 },
        { uid: widget.uid, quantity: -1 },
      ],
      [
        { uid: hour.uid, quantity: 9 },
        { uid: widget.uid, quantity: 1.5 },
      ],
      [{ uid: hour.uid, quantity: 9 }, { quantity: 1 }],
      [
        { uid: hour.uid, quantity: 9 },
        { uid: 'not-a-uuid', quantity: 1 },
      ],
      [
        { uid: hour.uid, quantity: 9 },
        { uid: widget.uid, currency: 'EURO' },
      ],
    ]) {
      expectErrorBody(await putLines(inv.uid, batch), 422, 'validation_failed');
      expect(await getInvoice(inv.uid)).toEqual(before);
    }
    const twice = expectErrorBody(
      await putLines(inv.uid, [
        { uid: hour.uid, quantity: 9 },
        { uid: hour.uid, quantity: 8 },
      ]),
      422,
      'validation_failed',
    );
    expect(twice.errors?.[0]?.field).toBe('[1].uid');
    expect(await getInvoice(inv.uid)).toEqual(before);
    const tooMany = Array.from({ length: 101 }, () => ({ uid: hour.uid, quantity: 1 }));
    expectErrorBody(await putLines(inv.uid, tooMany), 422, 'validation_failed');
    expect(await getInvoice(inv.uid)).toEqual(before);
  });

  it('a line of another invoice is refused (422): each uid must belong to this invoice', async () => {
    const mine = await withLines();
    const other = await withLines();
    expectErrorBody(
      await putLines(mine.uid, { uid: other.line_items[0].uid, quantity: 9 }),
      422,
      'validation_failed',
    );
    expect(await getInvoice(other.uid)).toEqual(other);
    expectErrorBody(await putLines(mine.uid, { quantity: 9 }), 422, 'validation_failed');
  });

  it('400 for a bad uuid, 404 for an unknown invoice', async () => {
    expectErrorBody(await putLines('nope', { uid: MISSING, quantity: 1 }), 400, 'invalid_parameter');
    expectErrorBody(await putLines(MISSING, { uid: MISSING, quantity: 1 }), 404, 'not_found');
  });

  it("another organization's invoice is 404 and its line stays as it was", async () => {
    expectErrorBody(await putLines(foreignInvoice, { uid: foreignLine, quantity: 50 }), 404, 'not_found');
    const theirs = await call(t.app, 'GET', `/api/invoices/${foreignInvoice}`, { key: p.orgB.admin.key });
    expect(theirs.body.data.line_items[0]).toMatchObject({ uid: foreignLine, quantity: 1 });
  });

  commonRouteChecks(
    'PUT /api/invoices/{uid}/line_items',
    {
      method: 'PUT',
      url: async () => `/api/invoices/${(await withLines()).uid}/line_items`,
      body: () => ({ uid: foreignLine, quantity: 2 }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/line_items`,
    },
    () => ({ t, p }),
  );
});
