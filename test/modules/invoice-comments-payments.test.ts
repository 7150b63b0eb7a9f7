import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let admin: { id: number; email: string; full_name: string; avatar_url: string | null };
let member: { id: number; email: string; full_name: string };
let foreignInvoice: string;
let foreignComment: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const DAY = 86_400_000;
const tag = () => crypto.randomBytes(4).toString('hex');

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  admin = (await call(t.app, 'GET', '/api/me', { key: p.orgA.admin.key })).body.data.user;
  member = (await call(t.app, 'GET', '/api/me', { key: p.orgA.member.key })).body.data.user;
  await post(p.orgA.admin.key, '/api/products', {
    sku: 'HOUR',
    name: 'Consulting hour',
    context_type: 'PRODUCT',
    unit_price: 2500,
    currency: 'USD',
  });
  await post(p.orgA.admin.key, '/api/products', {
    sku: 'LOYAL',
    name: 'Loyalty',
    context_type: 'DISCOUNT',
    unit_price: 500,
    currency: 'USD',
  });
  foreignInvoice = (
    await post(p.orgB.admin.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: 'B-1',
      currency: 'USD',
      status: 'open',
      tax_cents: 1000,
    })
  ).uid;
  foreignComment = (
    await post(p.orgB.admin.key, `/api/invoices/${foreignInvoice}/comments`, { text: 'B only' })
  ).uid;
});
afterAll(async () => t?.close());

async function post(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
/** An open receivable of 4 × 2500 − 500 + 1000 tax = 10500, minus 500 credit notes: 10000 due. */
const newInvoice = (body: Record<string, unknown> = {}) =>
  post(p.orgA.admin.key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: `INV-${tag()}`,
    currency: 'USD',
    status: 'open',
    issue_date: new Date(Date.now() - 40 * DAY).toISOString(),
    due_date: new Date(Date.now() - 10 * DAY).toISOString(),
    tax_cents: 1000,
    pre_payment_credit_notes_cents: 500,
    line_items: [
      { context_type: 'PRODUCT', sku: 'HOUR', quantity: 4 },
      { context_type: 'DISCOUNT', sku: 'LOYAL' },
    ],
    // The member comments here too: members work on the invoices assigned to them.
    assignee_user_uids: [p.orgA.member.userUid],
    ...body,
  });
const getInvoice = async (uid: string, key = p.orgA.admin.key) =>
  (await call(t.app, 'GET', `/api/invoices/${uid}`, { key })).body.data;
const addComment = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'POST', `/api/invoices/${uid}/comments`, { key, body });
const patchComment = (uid: string, commentUid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/invoices/${uid}/comments/${commentUid}`, { key, body });
const pay = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'POST', `/api/invoices/${uid}/payments`, { key, body });
const near = (iso: string, at: number) => Math.abs(Date.parse(iso) - at) < 60_000;

describe('POST /api/invoices/{uid}/comments', () => {
  it('201 with the comment and its actor; has_comments goes from false to true', async () => {
    const inv = await newInvoice();
    expect(inv.has_comments).toBe(false);
    expect(inv.comments).toEqual([]);
    const res = await addComment(inv.uid, { text: 'Customer asked for a copy' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    const comment = res.body.data;
    expect(comment).toEqual({
      uid: expect.stringMatching(UUID),
      text: 'Customer asked for a copy',
      created_at: expect.stringMatching(ISO),
      last_modified_at: expect.stringMatching(ISO),
      resolved_by: null,
      resolved_at: null,
      actor: { id: admin.id, fullname: admin.full_name, avatar: admin.avatar_url, email: admin.email },
    });
    expect(Number.isInteger(comment.actor.id)).toBe(true);
    expect(near(comment.created_at, Date.now())).toBe(true);

    const after = await getInvoice(inv.uid);
    expect(after.has_comments).toBe(true);
    expect(after.comments).toEqual([comment]);

    const second = (await addComment(inv.uid, { text: 'Sent' }, p.orgA.member.key)).body.data;
    expect(second.actor).toMatchObject({ id: member.id, fullname: member.full_name, email: member.email });
    const both = await getInvoice(inv.uid);
    expect(both.comments.map((c: { uid: string }) => c.uid)).toEqual([comment.uid, second.uid]);
    // The payable list's has_comments filter sees it too (the flag is stored on the invoice).
    const ap = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status: 'received' });
    await addComment(ap.uid, { text: 'Check the stamp' });
    const list = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/ap-invoices`, {
      key: p.orgA.admin.key,
      query: { view: 'list', has_comments: true, invoice_number: ap.invoice_number },
    });
    expect(list.body.items.map((i: { uid: string }) => i.uid)).toEqual([ap.uid]);
    expect(list.body.items[0].has_comments).toBe(true);
  });

  it('422 for missing, empty or non-string text; 400/404 for bad or unknown invoices', async () => {
    const inv = await newInvoice();
    expectErrorBody(await addComment(inv.uid, {}), 422, 'validation_failed');
    expectErrorBody(await addComment(inv.uid, { text: '' }), 422, 'validation_failed');
    expectErrorBody(await addComment(inv.uid, { text: 5 }), 422, 'validation_failed');
    expect((await getInvoice(inv.uid)).has_comments).toBe(false);
    expectErrorBody(await addComment('nope', { text: 'x' }), 400, 'invalid_parameter');
    expectErrorBody(await addComment(MISSING, { text: 'x' }), 404, 'not_found');
  });

  it("another organization's invoice is 404 and gets no comment", async () => {
    expectErrorBody(await addComment(foreignInvoice, { text: 'peek' }), 404, 'not_found');
    expect((await getInvoice(foreignInvoice, p.orgB.admin.key)).comments).toHaveLength(1);
  });

  commonRouteChecks(
    'POST /api/invoices/{uid}/comments',
    {
      method: 'POST',
      url: async () => `/api/invoices/${(await newInvoice()).uid}/comments`,
      body: () => ({ text: 'checked' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/comments`,
    },
    () => ({ t, p }),
  );
});

describe('PATCH /api/invoices/{uid}/comments/{comment_uid}', () => {
  async function withComment() {
    const inv = await newInvoice();
    const comment = (await addComment(inv.uid, { text: 'Original' })).body.data;
    return { inv, comment };
  }

  it('the author edits the text: last_modified_at moves, nothing else changes', async () => {
    const { inv, comment } = await withComment();
    // The edit happens a minute later on a fake clock (Date only): its time is exactly that minute.
    const editedAt = new Date(Date.parse(comment.last_modified_at) + 60_000);
    vi.useFakeTimers({ toFake: ['Date'], now: editedAt });
    const res = await patchComment(inv.uid, comment.uid, { text: 'Edited' }).finally(() =>
      vi.useRealTimers(),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data).toEqual({
      ...comment,
      text: 'Edited',
      last_modified_at: expect.stringMatching(ISO),
    });
    expect(Date.parse(res.body.data.last_modified_at)).toBe(editedAt.getTime());
    expect((await getInvoice(inv.uid)).comments).toEqual([res.body.data]);
  });

  it('only the author may edit the text (403), and the text stays', async () => {
    const { inv, comment } = await withComment();
    expectErrorBody(await patchComment(inv.uid, comment.uid, { text: 'Not mine' }, p.orgA.member.key), 403);
    expectErrorBody(
      await patchComment(inv.uid, comment.uid, { text: 'Not mine', resolved: true }, p.orgA.member.key),
      403,
    );
    expect((await getInvoice(inv.uid)).comments).toEqual([comment]);
  });

  it('resolved true records who (integer user id) and when; false reopens', async () => {
    const { inv, comment } = await withComment();
    const t0 = Date.now();
    // Resolving is not limited to the author.
    const resolved = await patchComment(inv.uid, comment.uid, { resolved: true }, p.orgA.member.key);
    expect(resolved.status, resolved.raw).toBe(200);
    expect(resolved.body.data).toMatchObject({ text: 'Original', resolved_by: member.id });
    expect(Number.isInteger(resolved.body.data.resolved_by)).toBe(true);
    expect(resolved.body.data.resolved_at).toMatch(ISO);
    expect(near(resolved.body.data.resolved_at, t0)).toBe(true);

    // Resolving again keeps the first resolution.
    const again = (await patchComment(inv.uid, comment.uid, { resolved: true })).body.data;
    expect(again).toMatchObject({ resolved_by: member.id, resolved_at: resolved.body.data.resolved_at });
    expect((await getInvoice(inv.uid)).comments[0]).toEqual(again);

    const reopened = (await patchComment(inv.uid, comment.uid, { resolved: false })).body.data;
    expect(reopened).toMatchObject({ resolved_by: null, resolved_at: null, text: 'Original' });
    const byAdmin = (await patchComment(inv.uid, comment.uid, { resolved: true, text: 'Done' })).body.data;
    expect(byAdmin).toMatchObject({ resolved_by: admin.id, text: 'Done' });
    expect((await getInvoice(inv.uid)).has_comments).toBe(true);
  });

  it('422 for empty text or a non-boolean resolved; 404 for an unknown comment or one of another invoice', async () => {
    const { inv, comment } = await withComment();
    const other = await withComment();
    expectErrorBody(await patchComment(inv.uid, comment.uid, { text: '' }), 422, 'validation_failed');
    expectErrorBody(await patchComment(inv.uid, comment.uid, { resolved: 'yes' }), 422, 'validation_failed');
    expectErrorBody(await patchComment(inv.uid, MISSING, { resolved: true }), 404, 'not_found');
    expectErrorBody(await patchComment(inv.uid, other.comment.uid, { resolved: true }), 404, 'not_found');
    expectErrorBody(await patchComment(inv.uid, 'nope', { resolved: true }), 400, 'invalid_parameter');
    expectErrorBody(await patchComment(MISSING, comment.uid, { resolved: true }), 404, 'not_found');
    expect((await getInvoice(other.inv.uid)).comments).toEqual([other.comment]);
    // orgA's invoice with orgB's comment: 404 as well.
    expectErrorBody(await patchComment(inv.uid, foreignComment, { resolved: true }), 404, 'not_found');
  });

  it("another organization's comment stays as it was", async () => {
    expectErrorBody(await patchComment(foreignInvoice, foreignComment, { resolved: true }), 404, 'not_found');
    const theirs = (await getInvoice(foreignInvoice, p.orgB.admin.key)).comments[0];
    expect(theirs).toMatchObject({ uid: foreignComment, resolved_by: null, text: 'B only' });
  });

  commonRouteChecks(
    'PATCH /api/invoices/{uid}/comments/{comment_uid}',
    {
      method: 'PATCH',
      url: async () => {
        const { inv, comment } = await withComment();
        return `/api/invoices/${inv.uid}/comments/${comment.uid}`;
      },
      body: () => ({ resolved: true }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/comments/${foreignComment}`,
    },
    () => ({ t, p }),
  );
});

describe('POST /api/invoices/{uid}/payments', () => {
  it('moves amount_paid and amount_remaining; settling the rest moves the invoice to paid', async () => {
    const inv = await newInvoice();
    expect(inv).toMatchObject({
      total_cents: 10500,
      amount_due_cents: 10000,
      amount_paid_cents: 0,
      amount_remaining_cents: 10000,
      overdue_days: 10,
      paid_date: null,
    });
    const res = await pay(inv.uid, { amount_cents: 4000, paid_at: '2026-01-10T12:00:00Z' });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201 });
    expect(res.body.data).toMatchObject({
      uid: inv.uid,
      status: 'open',
      total_cents: 10500,
      amount_due_cents: 10000,
      amount_paid_cents: 4000,
      amount_remaining_cents: 6000,
      paid_date: null,
      overdue_days: 10,
    });
    expect(await getInvoice(inv.uid)).toEqual(res.body.data);

    const paidAt = new Date(Date.now() - DAY).toISOString();
    const settled = await pay(inv.uid, { amount_cents: 6000, paid_at: paidAt });
    expect(settled.status, settled.raw).toBe(201);
    expect(settled.body.data).toMatchObject({
      status: 'paid',
      paid_date: paidAt,
      amount_paid_cents: 10000,
      amount_remaining_cents: 0,
      overdue_days: 0,
    });
    expect(await getInvoice(inv.uid)).toEqual(settled.body.data);
    // Nothing is left to pay.
    expectErrorBody(await pay(inv.uid, { amount_cents: 1 }), 422, 'validation_failed');
  });

  it('more than the remaining amount is refused (422) and nothing changes', async () => {
    const inv = await newInvoice();
    await pay(inv.uid, { amount_cents: 2500 });
    const before = await getInvoice(inv.uid);
    const body = expectErrorBody(await pay(inv.uid, { amount_cents: 7501 }), 422, 'validation_failed');
    expect(body.errors?.[0]?.field).toBe('amount_cents');
    expect(await getInvoice(inv.uid)).toEqual(before);
    const exact = await pay(inv.uid, { amount_cents: 7500 });
    expect(exact.body.data).toMatchObject({ status: 'paid', amount_remaining_cents: 0 });
  });

  it('paid_at defaults to now; a date is midnight UTC', async () => {
    const inv = await newInvoice();
    const t0 = Date.now();
    const settled = (await pay(inv.uid, { amount_cents: 10000 })).body.data;
    expect(settled.status).toBe('paid');
    expect(near(settled.paid_date, t0)).toBe(true);
    const other = await newInvoice();
    const byDay = (await pay(other.uid, { amount_cents: 10000, paid_at: '2026-02-03' })).body.data;
    expect(byDay.paid_date).toBe('2026-02-03T00:00:00.000Z');
  });

  it('the remaining amount is recomputed with the payments after a change to lines or tax', async () => {
    const inv = await newInvoice();
    await pay(inv.uid, { amount_cents: 3000 });
    const line = await call(t.app, 'POST', `/api/invoices/${inv.uid}/line_items`, {
      key: p.orgA.admin.key,
      body: { context_type: 'PRODUCT', sku: 'HOUR' },
    });
    expect(line.status).toBe(200);
    const withLine = await getInvoice(inv.uid);
    expect(withLine).toMatchObject({
      subtotal_cents: 12500,
      total_cents: 13000,
      amount_due_cents: 12500,
      amount_paid_cents: 3000,
      amount_remaining_cents: 9500,
    });
    const taxed = await call(t.app, 'PUT', `/api/invoices/${inv.uid}`, {
      key: p.orgA.admin.key,
      body: { tax_cents: 0 },
    });
    expect(taxed.body.data).toMatchObject({
      total_cents: 12000,
      amount_due_cents: 11500,
      amount_paid_cents: 3000,
      amount_remaining_cents: 8500,
    });
    const settled = (await pay(inv.uid, { amount_cents: 8500 })).body.data;
    expect(settled).toMatchObject({ status: 'paid', amount_paid_cents: 11500, amount_remaining_cents: 0 });
  });

  it('a payable is paid the same way', async () => {
    const ap = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status: 'approved' });
    const settled = (await pay(ap.uid, { amount_cents: 10000, paid_at: '2026-03-01T09:30:00Z' })).body.data;
    expect(settled).toMatchObject({ status: 'paid', paid_date: '2026-03-01T09:30:00.000Z' });
  });

  it('a draft, void or rejected invoice takes no payment (409)', async () => {
    for (const [type, status] of [
      ['ACCOUNTS_RECEIVABLE', 'draft'],
      ['ACCOUNTS_RECEIVABLE', 'void'],
      ['ACCOUNTS_PAYABLE', 'rejected'],
    ]) {
      const inv = await newInvoice({ invoice_type: type, status });
      expectErrorBody(await pay(inv.uid, { amount_cents: 100 }), 409, 'invalid_state');
      expect((await getInvoice(inv.uid)).amount_paid_cents).toBe(0);
    }
  });

  it('422 for a bad amount or paid_at; 400/404 for bad or unknown invoices', async () => {
    const inv = await newInvoice();
    for (const body of [
      {},
      { amount_cents: 0 },
      { amount_cents: -5 },
      { amount_cents: 10.5 },
      { amount_cents: '100' },
      { amount_cents: 100, paid_at: 'yesterday' },
    ]) {
      expectErrorBody(await pay(inv.uid, body), 422, 'validation_failed');
    }
    expect(await getInvoice(inv.uid)).toEqual(inv);
    expectErrorBody(await pay('nope', { amount_cents: 1 }), 400, 'invalid_parameter');
    expectErrorBody(await pay(MISSING, { amount_cents: 1 }), 404, 'not_found');
  });

  it("another organization's invoice is 404 and stays unpaid", async () => {
    // What other tests paid on it (they run in any order) stays exactly that.
    const before = (await getInvoice(foreignInvoice, p.orgB.admin.key)).amount_paid_cents;
    expectErrorBody(await pay(foreignInvoice, { amount_cents: 100 }), 404, 'not_found');
    expect((await getInvoice(foreignInvoice, p.orgB.admin.key)).amount_paid_cents).toBe(before);
  });

  commonRouteChecks(
    'POST /api/invoices/{uid}/payments',
    {
      method: 'POST',
      url: async () => `/api/invoices/${(await newInvoice()).uid}/payments`,
      body: () => ({ amount_cents: 100 }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/payments`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/invoices/{uid}/payments', () => {
  const list = (uid: string, key = p.orgA.admin.key) =>
    call(t.app, 'GET', `/api/invoices/${uid}/payments`, { key });

  it('an empty list before any payment', async () => {
    const inv = await newInvoice();
    const res = await list(inv.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, data: { items: [] } });
  });

  it('every payment, oldest first, in the invoice currency, with who recorded it', async () => {
    const inv = await newInvoice();
    expect((await pay(inv.uid, { amount_cents: 3000, paid_at: '2026-02-01T09:00:00Z' })).status).toBe(201);
    expect((await pay(inv.uid, { amount_cents: 1000, paid_at: '2026-01-15' })).status).toBe(201);
    const res = await list(inv.uid);
    expect(res.status, res.raw).toBe(200);
    const items = res.body.data.items;
    expect(items).toHaveLength(2);
    expect(items[0]).toEqual({
      uid: expect.stringMatching(UUID),
      invoice_uid: inv.uid,
      amount_cents: 1000,
      currency: 'USD',
      paid_at: '2026-01-15T00:00:00.000Z',
      recorded_by: { user_uid: p.orgA.admin.userUid, full_name: admin.full_name },
      created_at: expect.stringMatching(ISO),
      // Refunds and voids (invoice-credits.test.ts): none here.
      status: 'succeeded',
      amount_refunded_cents: 0,
      amount_net_cents: 1000,
      refunds: [],
      voided_at: null,
      voided_by: null,
      void_reason: null,
    });
    expect(items[1]).toMatchObject({ amount_cents: 3000, paid_at: '2026-02-01T09:00:00.000Z' });
    expect(items.reduce((sum: number, i: { amount_cents: number }) => sum + i.amount_cents, 0)).toBe(
      (await getInvoice(inv.uid)).amount_paid_cents,
    );
  });

  it('a member sees the payments of an invoice assigned to them, and 404 for one they may not see', async () => {
    const mine = await newInvoice();
    await pay(mine.uid, { amount_cents: 500 });
    const res = await list(mine.uid, p.orgA.member.key);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.items).toHaveLength(1);
    const notMine = await newInvoice({ assignee_user_uids: [] });
    await pay(notMine.uid, { amount_cents: 500 });
    expectErrorBody(await list(notMine.uid, p.orgA.member.key), 404, 'not_found');
  });

  it('400 for a bad uid, 404 for an unknown invoice', async () => {
    expectErrorBody(await list('not-a-uid'), 400, 'invalid_parameter');
    expectErrorBody(await list(MISSING), 404, 'not_found');
  });

  it("another organization's invoice is 404, its payments unseen", async () => {
    await call(t.app, 'POST', `/api/invoices/${foreignInvoice}/payments`, {
      key: p.orgB.admin.key,
      body: { amount_cents: 100 },
    });
    expectErrorBody(await list(foreignInvoice), 404, 'not_found');
    expect((await list(foreignInvoice, p.orgB.admin.key)).body.data.items.length).toBeGreaterThan(0);
  });

  commonRouteChecks(
    'GET /api/invoices/{uid}/payments',
    {
      method: 'GET',
      url: async () => `/api/invoices/${(await newInvoice()).uid}/payments`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/payments`,
    },
    () => ({ t, p }),
  );
});
