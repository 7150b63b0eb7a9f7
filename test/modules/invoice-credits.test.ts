import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';

/**
 * Credit notes, refunds and voided payments, the organization's payment list, and money changes that
 * race on one invoice (docs/invoices.md#payments-refunds-and-credit-notes). Run on both engines; the
 * races matter on PostgreSQL, where the requests really run at once.
 */
let t: TestApp;
let p: Principals;
let foreignInvoice: string;
let foreignPayment: string;
let foreignCreditNote: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => crypto.randomBytes(4).toString('hex');
const admin = () => p.orgA.admin.key;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  for (const org of [p.orgA, p.orgB]) {
    await post(org.admin.key, '/api/products', {
      sku: 'HOUR',
      name: 'Consulting hour',
      context_type: 'PRODUCT',
      unit_price: 2500,
      currency: 'USD',
    });
  }
  foreignInvoice = (await newInvoice({}, p.orgB.admin.key)).uid;
  foreignPayment = await payUid(foreignInvoice, 1000, p.orgB.admin.key);
  foreignCreditNote = (
    await post(p.orgB.admin.key, `/api/invoices/${foreignInvoice}/credit-notes`, {
      amount_cents: 500,
      reason: 'other',
    })
  ).credit_note.uid;
});
afterAll(async () => t?.close());

async function post(key: string, url: string, body: unknown, status = 201) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBe(status);
  return res.body.data;
}
const get = async (url: string, key = admin(), query?: Record<string, string | number>) => {
  const res = await call(t.app, 'GET', url, { key, ...(query ? { query } : {}) });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
};

/** An open receivable of 4 × 2500 = 10000, assigned to orgA's member. */
const newInvoice = (body: Record<string, unknown> = {}, key = admin()) =>
  post(key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: `CR-${tag()}`,
    currency: 'USD',
    status: 'open',
    line_items: [{ context_type: 'PRODUCT', sku: 'HOUR', quantity: 4 }],
    ...(key === admin() ? { assignee_user_uids: [p.orgA.member.userUid] } : {}),
    ...body,
  });
const invoiceOf = (uid: string, key = admin()) => get(`/api/invoices/${uid}`, key);
const pay = (uid: string, amount: number, key = admin()) =>
  call(t.app, 'POST', `/api/invoices/${uid}/payments`, { key, body: { amount_cents: amount } });
async function payUid(invoiceUid: string, amount: number, key = admin()): Promise<string> {
  const res = await pay(invoiceUid, amount, key);
  expect(res.status, res.raw).toBe(201);
  const items = (await get(`/api/invoices/${invoiceUid}/payments`, key)).items;
  return items[items.length - 1].uid;
}
const creditNote = (uid: string, body: unknown, key = admin()) =>
  call(t.app, 'POST', `/api/invoices/${uid}/credit-notes`, { key, body });
const voidCreditNote = (uid: string, note: string, body: unknown = {}, key = admin()) =>
  call(t.app, 'POST', `/api/invoices/${uid}/credit-notes/${note}/void`, { key, body });
const refund = (uid: string, payment: string, body: unknown, key = admin()) =>
  call(t.app, 'POST', `/api/invoices/${uid}/payments/${payment}/refund`, { key, body });
const voidPayment = (uid: string, payment: string, body: unknown, key = admin()) =>
  call(t.app, 'POST', `/api/invoices/${uid}/payments/${payment}/void`, { key, body });

/** The derived money, and that it adds up (CONTRACT §4). */
interface Money {
  total_cents: number;
  pre_payment_credit_notes_cents: number;
  amount_due_cents: number;
  amount_paid_cents: number;
  amount_remaining_cents: number;
}
function expectConsistent(invoice: Money) {
  expect(invoice.amount_due_cents).toBe(invoice.total_cents - invoice.pre_payment_credit_notes_cents);
  expect(invoice.amount_remaining_cents).toBe(invoice.amount_due_cents - invoice.amount_paid_cents);
}
const money = (i: Record<string, unknown>) => ({
  status: i.status,
  pre_payment_credit_notes_cents: i.pre_payment_credit_notes_cents,
  amount_due_cents: i.amount_due_cents,
  amount_paid_cents: i.amount_paid_cents,
  amount_remaining_cents: i.amount_remaining_cents,
});

/** orgA's audit events about an invoice (and its payments and credit notes), oldest first. */
async function auditOf(
  invoiceUid: string,
): Promise<{ action: string; entity_uid: string; changes: Record<string, unknown> }[]> {
  const data = await get(`/api/organization/${p.orgA.uid}/audit-events`, admin(), {
    entity_uid: invoiceUid,
    per_page: 100,
  });
  return data.items.reverse();
}
/** orgA's webhook events about an invoice, oldest first. */
async function eventsOf(invoiceUid: string): Promise<{ type: string; data: unknown }[]> {
  const data = await get('/api/events', admin(), { entity_uid: invoiceUid, per_page: 100 });
  return data.items.reverse();
}

describe('credit notes', () => {
  it('201: the amount moves into pre_payment_credit_notes_cents, due and remaining shrink; listed with who issued it', async () => {
    const inv = await newInvoice({ pre_payment_credit_notes_cents: 500 });
    expect(money(inv)).toMatchObject({ pre_payment_credit_notes_cents: 500, amount_remaining_cents: 9500 });
    const res = await creditNote(inv.uid, {
      amount_cents: 2000,
      reason: 'order_change',
      memo: 'One hour less',
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201 });
    const { credit_note: note, invoice } = res.body.data;
    expect(note).toEqual({
      uid: expect.stringMatching(UUID),
      invoice_uid: inv.uid,
      amount_cents: 2000,
      currency: 'USD',
      reason: 'order_change',
      memo: 'One hour less',
      status: 'issued',
      created_by: { user_uid: p.orgA.admin.userUid, full_name: 'A Admin' },
      created_at: expect.stringMatching(ISO),
      voided_at: null,
      voided_by: null,
      void_reason: null,
    });
    expect(money(invoice)).toEqual({
      status: 'open',
      pre_payment_credit_notes_cents: 2500,
      amount_due_cents: 7500,
      amount_paid_cents: 0,
      amount_remaining_cents: 7500,
    });
    expectConsistent(invoice);
    expect(await invoiceOf(inv.uid)).toEqual(invoice);
    expect((await get(`/api/invoices/${inv.uid}/credit-notes`)).items).toEqual([note]);
    // The member it is assigned to reads them too.
    expect((await get(`/api/invoices/${inv.uid}/credit-notes`, p.orgA.member.key)).items).toEqual([note]);
  });

  it('one that leaves nothing to pay settles the invoice (paid, paid_date); voiding it reopens it', async () => {
    const inv = await newInvoice();
    await payUid(inv.uid, 4000);
    const res = await creditNote(inv.uid, { amount_cents: 6000, reason: 'product_unsatisfactory' });
    expect(res.status, res.raw).toBe(201);
    const settled = res.body.data.invoice;
    expect(money(settled)).toEqual({
      status: 'paid',
      pre_payment_credit_notes_cents: 6000,
      amount_due_cents: 4000,
      amount_paid_cents: 4000,
      amount_remaining_cents: 0,
    });
    expect(Math.abs(Date.parse(settled.paid_date) - Date.now())).toBeLessThan(60_000);
    // Nothing left: another credit note or payment is refused.
    expectErrorBody(
      await creditNote(inv.uid, { amount_cents: 1, reason: 'other' }),
      422,
      'validation_failed',
    );

    const noteUid = res.body.data.credit_note.uid;
    const voided = await voidCreditNote(inv.uid, noteUid, { reason: 'Issued in error' });
    expect(voided.status, voided.raw).toBe(200);
    expect(voided.body.data.credit_note).toMatchObject({
      uid: noteUid,
      status: 'void',
      voided_at: expect.stringMatching(ISO),
      voided_by: { user_uid: p.orgA.admin.userUid, full_name: 'A Admin' },
      void_reason: 'Issued in error',
    });
    const reopened = voided.body.data.invoice;
    expect(money(reopened)).toEqual({
      status: 'open',
      pre_payment_credit_notes_cents: 0,
      amount_due_cents: 10000,
      amount_paid_cents: 4000,
      amount_remaining_cents: 6000,
    });
    expect(reopened.paid_date).toBeNull();
    expect(await invoiceOf(inv.uid)).toEqual(reopened);

    const audit = await auditOf(inv.uid);
    expect(audit.map((e) => e.action)).toEqual([
      'invoice.created',
      'line_item.created',
      'payment.recorded',
      'credit_note.created',
      'invoice.status_changed',
      'credit_note.voided',
      'invoice.status_changed',
    ]);
    expect(audit[3]!.changes).toMatchObject({
      amount_cents: { before: null, after: 6000 },
      reason: { before: null, after: 'product_unsatisfactory' },
      status: { before: null, after: 'issued' },
    });
    expect(audit[4]!.changes).toMatchObject({
      status: { before: 'open', after: 'paid' },
      pre_payment_credit_notes_cents: { before: 0, after: 6000 },
      amount_remaining_cents: { before: 6000, after: 0 },
    });
    expect(audit[5]!.changes).toMatchObject({
      status: { before: 'issued', after: 'void' },
      void_reason: { before: null, after: 'Issued in error' },
    });
    expect(audit[6]!.changes).toMatchObject({ status: { before: 'paid', after: 'open' } });
    expect((await eventsOf(inv.uid)).map((e) => e.type)).toEqual([
      'invoice.created',
      'payment.recorded',
      'invoice.updated',
      'credit_note.created',
      'invoice.updated',
      'invoice.status_changed',
      'credit_note.voided',
      'invoice.updated',
      'invoice.status_changed',
    ]);
  });

  it('a payable takes credit notes the same way', async () => {
    const ap = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status: 'approved' });
    const res = await creditNote(ap.uid, { amount_cents: 10000, reason: 'duplicate' });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data.invoice).toMatchObject({ status: 'paid', amount_remaining_cents: 0 });
    const back = await voidCreditNote(ap.uid, res.body.data.credit_note.uid);
    // A payable goes back to the furthest step it had reached.
    expect(back.body.data.invoice).toMatchObject({ status: 'approved', amount_remaining_cents: 10000 });
  });

  it('422 beyond the remaining amount or for a bad body; nothing changes', async () => {
    const inv = await newInvoice();
    await payUid(inv.uid, 3000);
    const before = await invoiceOf(inv.uid);
    const over = await creditNote(inv.uid, { amount_cents: 7001, reason: 'other' });
    expectErrorBody(over, 422, 'validation_failed');
    expect(over.body.errors).toEqual([{ field: 'amount_cents', message: expect.stringContaining('7000') }]);
    for (const body of [
      {},
      { amount_cents: 0, reason: 'other' },
      { amount_cents: -5, reason: 'other' },
      { amount_cents: 1.5, reason: 'other' },
      { amount_cents: 100 },
      { amount_cents: 100, reason: 'because' },
      { amount_cents: 100, reason: 'other', extra: 1 },
    ]) {
      expectErrorBody(await creditNote(inv.uid, body), 422, 'validation_failed');
    }
    expect(await invoiceOf(inv.uid)).toEqual(before);
    expect((await get(`/api/invoices/${inv.uid}/credit-notes`)).items).toEqual([]);
  });

  it('409 on a draft or void invoice, and for voiding twice; 404 for an unknown note or one of another invoice', async () => {
    const draft = await newInvoice({ status: 'draft' });
    expectErrorBody(
      await creditNote(draft.uid, { amount_cents: 100, reason: 'other' }),
      409,
      'invalid_state',
    );
    const voidInv = await newInvoice({ status: 'void' });
    expectErrorBody(
      await creditNote(voidInv.uid, { amount_cents: 100, reason: 'other' }),
      409,
      'invalid_state',
    );

    const inv = await newInvoice();
    const note = (
      await post(admin(), `/api/invoices/${inv.uid}/credit-notes`, { amount_cents: 100, reason: 'other' })
    ).credit_note;
    // No body at all: the reason is optional.
    const first = await call(t.app, 'POST', `/api/invoices/${inv.uid}/credit-notes/${note.uid}/void`, {
      key: admin(),
    });
    expect(first.status, first.raw).toBe(200);
    expect(first.body.data.credit_note).toMatchObject({ status: 'void', void_reason: null });
    const again = await voidCreditNote(inv.uid, note.uid);
    expectErrorBody(again, 409, 'invalid_state');
    expect((await invoiceOf(inv.uid)).pre_payment_credit_notes_cents).toBe(0);

    const other = await newInvoice();
    expectErrorBody(await voidCreditNote(other.uid, note.uid), 404, 'not_found');
    expectErrorBody(await voidCreditNote(inv.uid, MISSING), 404, 'not_found');
    expectErrorBody(await creditNote(MISSING, { amount_cents: 1, reason: 'other' }), 404, 'not_found');
    expectErrorBody(await creditNote('nope', { amount_cents: 1, reason: 'other' }), 400, 'invalid_parameter');
  });

  it('PUT may not set pre_payment_credit_notes_cents by hand while credit notes count (409); the same value passes', async () => {
    const inv = await newInvoice();
    const note = (await creditNote(inv.uid, { amount_cents: 1000, reason: 'other' })).body.data.credit_note;
    const put = (body: unknown) => call(t.app, 'PUT', `/api/invoices/${inv.uid}`, { key: admin(), body });
    expectErrorBody(await put({ pre_payment_credit_notes_cents: 0 }), 409, 'invalid_state');
    const same = await put({ pre_payment_credit_notes_cents: 1000, invoice_notes: { invoice_memo: 'kept' } });
    expect(same.status, same.raw).toBe(200);
    await voidCreditNote(inv.uid, note.uid);
    const free = await put({ pre_payment_credit_notes_cents: 300 });
    expect(free.status, free.raw).toBe(200);
    expect(money(free.body.data)).toMatchObject({
      pre_payment_credit_notes_cents: 300,
      amount_remaining_cents: 9700,
    });
  });

  it('members may read but not issue or void (403); another organization’s invoice or note is 404', async () => {
    const inv = await newInvoice();
    expectErrorBody(
      await creditNote(inv.uid, { amount_cents: 100, reason: 'other' }, p.orgA.member.key),
      403,
      'forbidden',
    );
    const note = (await creditNote(inv.uid, { amount_cents: 100, reason: 'other' })).body.data.credit_note;
    expectErrorBody(await voidCreditNote(inv.uid, note.uid, {}, p.orgA.member.key), 403, 'forbidden');
    // Whatever the uid: a member learns nothing from the answer.
    expectErrorBody(
      await creditNote(MISSING, { amount_cents: 100, reason: 'other' }, p.orgA.member.key),
      403,
      'forbidden',
    );
    expect((await invoiceOf(inv.uid)).pre_payment_credit_notes_cents).toBe(100);
    // A member who is not assigned does not see the invoice at all.
    const unassigned = await newInvoice({ assignee_user_uids: [] });
    expectErrorBody(
      await call(t.app, 'GET', `/api/invoices/${unassigned.uid}/credit-notes`, { key: p.orgA.member.key }),
      404,
      'not_found',
    );
    expectErrorBody(await creditNote(foreignInvoice, { amount_cents: 1, reason: 'other' }), 404, 'not_found');
    expectErrorBody(await voidCreditNote(foreignInvoice, foreignCreditNote), 404, 'not_found');
    expectErrorBody(await voidCreditNote(inv.uid, foreignCreditNote), 404, 'not_found');
    const theirs = await get(`/api/invoices/${foreignInvoice}/credit-notes`, p.orgB.admin.key);
    expect(theirs.items.map((n: { status: string }) => n.status)).toEqual(['issued']);
  });

  commonRouteChecks(
    'GET /api/invoices/{uid}/credit-notes',
    {
      method: 'GET',
      url: async () => `/api/invoices/${(await newInvoice()).uid}/credit-notes`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/credit-notes`,
    },
    () => ({ t, p }),
  );
  commonRouteChecks(
    'POST /api/invoices/{uid}/credit-notes',
    {
      method: 'POST',
      url: async () => `/api/invoices/${(await newInvoice()).uid}/credit-notes`,
      body: () => ({ amount_cents: 100, reason: 'other' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/credit-notes`,
    },
    () => ({ t, p }),
  );
  commonRouteChecks(
    'POST /api/invoices/{uid}/credit-notes/{credit_note_uid}/void',
    {
      method: 'POST',
      url: async () => {
        const inv = await newInvoice();
        const note = (await creditNote(inv.uid, { amount_cents: 100, reason: 'other' })).body.data
          .credit_note;
        return `/api/invoices/${inv.uid}/credit-notes/${note.uid}/void`;
      },
      body: () => ({}),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/credit-notes/${foreignCreditNote}/void`,
    },
    () => ({ t, p }),
  );
});

describe('refunds', () => {
  it('201: a partial refund is its own record; the payment is partially_refunded and the invoice owes it again', async () => {
    const inv = await newInvoice();
    const paymentUid = await payUid(inv.uid, 6000);
    const res = await refund(inv.uid, paymentUid, {
      amount_cents: 1000,
      reason: 'Customer returned an hour',
    });
    expect(res.status, res.raw).toBe(201);
    const { refund: r, payment, invoice } = res.body.data;
    expect(r).toEqual({
      uid: expect.stringMatching(UUID),
      payment_uid: paymentUid,
      invoice_uid: inv.uid,
      amount_cents: 1000,
      reason: 'Customer returned an hour',
      refunded_by: { user_uid: p.orgA.admin.userUid, full_name: 'A Admin' },
      created_at: expect.stringMatching(ISO),
    });
    expect(payment).toMatchObject({
      uid: paymentUid,
      amount_cents: 6000,
      status: 'partially_refunded',
      amount_refunded_cents: 1000,
      amount_net_cents: 5000,
      refunds: [r],
      voided_at: null,
    });
    expect(money(invoice)).toEqual({
      status: 'open',
      pre_payment_credit_notes_cents: 0,
      amount_due_cents: 10000,
      amount_paid_cents: 5000,
      amount_remaining_cents: 5000,
    });
    expect(await invoiceOf(inv.uid)).toEqual(invoice);
    expect((await get(`/api/invoices/${inv.uid}/payments`)).items).toEqual([payment]);

    // The rest, by default: refunded, and then nothing is left to refund.
    const rest = await refund(inv.uid, paymentUid, { reason: 'Cancelled' });
    expect(rest.status, rest.raw).toBe(201);
    expect(rest.body.data.refund.amount_cents).toBe(5000);
    expect(rest.body.data.payment).toMatchObject({
      status: 'refunded',
      amount_refunded_cents: 6000,
      amount_net_cents: 0,
    });
    expect(rest.body.data.payment.refunds).toHaveLength(2);
    expect(money(rest.body.data.invoice)).toMatchObject({
      amount_paid_cents: 0,
      amount_remaining_cents: 10000,
    });
    expectErrorBody(await refund(inv.uid, paymentUid, { reason: 'again' }), 409, 'invalid_state');

    const audit = (await auditOf(inv.uid)).filter((e) => e.action === 'payment.refunded');
    expect(audit).toHaveLength(2);
    expect(audit[0]).toMatchObject({ entity_uid: paymentUid });
    expect(audit[0]!.changes).toEqual({
      status: { before: 'succeeded', after: 'partially_refunded' },
      amount_refunded_cents: { before: 0, after: 1000 },
      refund: {
        before: null,
        after: { uid: r.uid, amount_cents: 1000, reason: 'Customer returned an hour' },
      },
    });
    const events = (await eventsOf(inv.uid)).filter((e) => e.type === 'payment.refunded');
    expect(events).toHaveLength(2);
    expect(events[0]!.data).toMatchObject({
      refund: r,
      payment: { uid: paymentUid, status: 'partially_refunded' },
    });
  });

  it('a refund of a paid invoice moves it back to open (paid_date cleared), once', async () => {
    const inv = await newInvoice();
    const paymentUid = await payUid(inv.uid, 10000);
    expect((await invoiceOf(inv.uid)).status).toBe('paid');
    const res = await refund(inv.uid, paymentUid, { amount_cents: 100, reason: 'Goodwill' });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data.invoice).toMatchObject({
      status: 'open',
      paid_date: null,
      amount_remaining_cents: 100,
    });
    const moves = (await auditOf(inv.uid)).filter((e) => e.action === 'invoice.status_changed');
    expect(moves.map((e) => e.changes.status)).toEqual([
      { before: 'open', after: 'paid' },
      { before: 'paid', after: 'open' },
    ]);
    // Paying the 100 again settles it again.
    expect((await pay(inv.uid, 100)).body.data).toMatchObject({ status: 'paid', amount_remaining_cents: 0 });
  });

  it('a paid payable goes back to the furthest step it had reached', async () => {
    const ap = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status: 'registered' });
    const paymentUid = await payUid(ap.uid, 10000);
    const res = await refund(ap.uid, paymentUid, { amount_cents: 10000, reason: 'Vendor returned it' });
    expect(res.body.data.invoice).toMatchObject({ status: 'registered', paid_date: null });
  });

  it('422 beyond what is left to refund or for a bad body; nothing changes', async () => {
    const inv = await newInvoice();
    const paymentUid = await payUid(inv.uid, 3000);
    await refund(inv.uid, paymentUid, { amount_cents: 1000, reason: 'first' });
    const before = await invoiceOf(inv.uid);
    const over = await refund(inv.uid, paymentUid, { amount_cents: 2001, reason: 'too much' });
    expectErrorBody(over, 422, 'validation_failed');
    expect(over.body.errors).toEqual([{ field: 'amount_cents', message: expect.stringContaining('2000') }]);
    for (const body of [
      {},
      { amount_cents: 0, reason: 'x' },
      { amount_cents: 10, reason: '' },
      { reason: 5 },
    ]) {
      expectErrorBody(await refund(inv.uid, paymentUid, body), 422, 'validation_failed');
    }
    expect(await invoiceOf(inv.uid)).toEqual(before);
    expect((await get(`/api/invoices/${inv.uid}/payments`)).items[0].refunds).toHaveLength(1);
  });

  it('409 for a voided payment; 404 for an unknown payment, one of another invoice or organization', async () => {
    const inv = await newInvoice();
    const paymentUid = await payUid(inv.uid, 3000);
    await post(admin(), `/api/invoices/${inv.uid}/payments/${paymentUid}/void`, { reason: 'typo' }, 200);
    expectErrorBody(await refund(inv.uid, paymentUid, { reason: 'x' }), 409, 'invalid_state');
    const other = await newInvoice();
    expectErrorBody(await refund(other.uid, paymentUid, { reason: 'x' }), 404, 'not_found');
    expectErrorBody(await refund(inv.uid, MISSING, { reason: 'x' }), 404, 'not_found');
    expectErrorBody(await refund(inv.uid, foreignPayment, { reason: 'x' }), 404, 'not_found');
    expectErrorBody(await refund(foreignInvoice, foreignPayment, { reason: 'x' }), 404, 'not_found');
    expect((await get(`/api/invoices/${foreignInvoice}/payments`, p.orgB.admin.key)).items[0]).toMatchObject({
      status: 'succeeded',
      amount_refunded_cents: 0,
    });
  });

  it('members may not refund (403)', async () => {
    const inv = await newInvoice();
    const paymentUid = await payUid(inv.uid, 3000);
    expectErrorBody(await refund(inv.uid, paymentUid, { reason: 'x' }, p.orgA.member.key), 403, 'forbidden');
    expect((await invoiceOf(inv.uid)).amount_paid_cents).toBe(3000);
  });

  commonRouteChecks(
    'POST /api/invoices/{uid}/payments/{payment_uid}/refund',
    {
      method: 'POST',
      url: async () => {
        const inv = await newInvoice();
        return `/api/invoices/${inv.uid}/payments/${await payUid(inv.uid, 1000)}/refund`;
      },
      body: () => ({ reason: 'checked' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/payments/${foreignPayment}/refund`,
    },
    () => ({ t, p }),
  );
});

describe('voided payments', () => {
  it('200: kept, marked voided with who, when and why; it no longer counts, and a paid invoice reopens', async () => {
    const inv = await newInvoice();
    const keep = await payUid(inv.uid, 4000);
    const mistake = await payUid(inv.uid, 6000);
    expect((await invoiceOf(inv.uid)).status).toBe('paid');
    const res = await voidPayment(inv.uid, mistake, { reason: 'Entered twice' });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.payment).toMatchObject({
      uid: mistake,
      amount_cents: 6000,
      status: 'voided',
      amount_net_cents: 0,
      voided_at: expect.stringMatching(ISO),
      voided_by: { user_uid: p.orgA.admin.userUid, full_name: 'A Admin' },
      void_reason: 'Entered twice',
    });
    expect(money(res.body.data.invoice)).toEqual({
      status: 'open',
      pre_payment_credit_notes_cents: 0,
      amount_due_cents: 10000,
      amount_paid_cents: 4000,
      amount_remaining_cents: 6000,
    });
    const list = (await get(`/api/invoices/${inv.uid}/payments`)).items;
    expect(list.map((x: { uid: string; status: string }) => [x.uid, x.status])).toEqual([
      [keep, 'succeeded'],
      [mistake, 'voided'],
    ]);
    expectErrorBody(await voidPayment(inv.uid, mistake, { reason: 'again' }), 409, 'invalid_state');

    const audit = (await auditOf(inv.uid)).filter((e) => e.action === 'payment.voided');
    expect(audit).toHaveLength(1);
    expect(audit[0]!.changes).toMatchObject({
      status: { before: 'succeeded', after: 'voided' },
      void_reason: { before: null, after: 'Entered twice' },
      voided_by_user_uid: { before: null, after: p.orgA.admin.userUid },
    });
    expect((await eventsOf(inv.uid)).map((e) => e.type).slice(-3)).toEqual([
      'payment.voided',
      'invoice.updated',
      'invoice.status_changed',
    ]);
  });

  it('409 for a payment with refunds; 422 without a reason; 404 for unknown ones; 403 for members', async () => {
    const inv = await newInvoice();
    const paymentUid = await payUid(inv.uid, 3000);
    expectErrorBody(await voidPayment(inv.uid, paymentUid, {}), 422, 'validation_failed');
    expectErrorBody(
      await voidPayment(inv.uid, paymentUid, { reason: 'x' }, p.orgA.member.key),
      403,
      'forbidden',
    );
    await refund(inv.uid, paymentUid, { amount_cents: 1, reason: 'partial' });
    expectErrorBody(await voidPayment(inv.uid, paymentUid, { reason: 'x' }), 409, 'invalid_state');
    expectErrorBody(await voidPayment(inv.uid, MISSING, { reason: 'x' }), 404, 'not_found');
    expectErrorBody(await voidPayment(foreignInvoice, foreignPayment, { reason: 'x' }), 404, 'not_found');
  });

  commonRouteChecks(
    'POST /api/invoices/{uid}/payments/{payment_uid}/void',
    {
      method: 'POST',
      url: async () => {
        const inv = await newInvoice();
        return `/api/invoices/${inv.uid}/payments/${await payUid(inv.uid, 1000)}/void`;
      },
      body: () => ({ reason: 'checked' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/payments/${foreignPayment}/void`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/payments', () => {
  let first: { uid: string; invoice_number: string };
  let second: { uid: string };
  let hidden: { uid: string };
  let refunded: string;
  let voided: string;
  beforeAll(async () => {
    first = await newInvoice();
    second = await newInvoice();
    hidden = await newInvoice({ assignee_user_uids: [] });
    const at = (uid: string, amount: number, paidAt: string) =>
      post(admin(), `/api/invoices/${uid}/payments`, { amount_cents: amount, paid_at: paidAt });
    await at(first.uid, 1000, '2031-01-10T09:00:00Z');
    await at(first.uid, 2000, '2031-01-11T09:00:00Z');
    await at(second.uid, 3000, '2031-01-12T23:59:00Z');
    await at(hidden.uid, 4000, '2031-01-13T09:00:00Z');
    const payments = (await get(`/api/invoices/${first.uid}/payments`)).items;
    refunded = payments[0].uid;
    voided = payments[1].uid;
    await refund(first.uid, refunded, { amount_cents: 400, reason: 'part' });
    await voidPayment(first.uid, voided, { reason: 'mistake' });
  });
  const list = (query: Record<string, string | number> = {}, key = admin()) =>
    call(t.app, 'GET', '/api/payments', { key, query: { from: '2031-01-01', to: '2031-01-31', ...query } });

  it('the organization’s payments, newest first, with the invoice, status and refunds', async () => {
    const res = await list();
    expect(res.status, res.raw).toBe(200);
    const { items, _meta, _links } = res.body.data;
    expect(items.map((x: { amount_cents: number }) => x.amount_cents)).toEqual([4000, 3000, 2000, 1000]);
    expect(_meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 4 });
    expect(_links.next).toBeNull();
    const oldest = items[3];
    expect(oldest).toMatchObject({
      uid: refunded,
      invoice_uid: first.uid,
      invoice_number: first.invoice_number,
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      currency: 'USD',
      paid_at: '2031-01-10T09:00:00.000Z',
      status: 'partially_refunded',
      amount_refunded_cents: 400,
      amount_net_cents: 600,
      recorded_by: { user_uid: p.orgA.admin.userUid, full_name: 'A Admin' },
    });
    expect(oldest.refunds).toEqual([expect.objectContaining({ amount_cents: 400, reason: 'part' })]);
    expect(items[2]).toMatchObject({ uid: voided, status: 'voided', void_reason: 'mistake' });
  });

  it('filters by invoice, status and paid_at range (a date as `to` includes that day); pages', async () => {
    const amounts = async (query: Record<string, string | number>) =>
      (await list(query)).body.data.items.map((x: { amount_cents: number }) => x.amount_cents);
    expect(await amounts({ invoice_uid: first.uid })).toEqual([2000, 1000]);
    expect(await amounts({ status: 'voided' })).toEqual([2000]);
    expect(await amounts({ status: 'partially_refunded' })).toEqual([1000]);
    expect(await amounts({ status: 'refunded' })).toEqual([]);
    expect(await amounts({ from: '2031-01-11', to: '2031-01-12' })).toEqual([3000, 2000]);
    expect(await amounts({ from: '2031-01-11T10:00:00Z', to: '2031-01-12T23:58:59Z' })).toEqual([]);
    // A date-time `from` with a bare-date `to` (that whole day), as the audit log takes it.
    expect(await amounts({ from: '2031-01-10T08:00:00Z', to: '2031-01-10' })).toEqual([1000]);
    const backwards = await list({ from: '2031-01-12', to: '2031-01-11T00:00:00Z' });
    expectErrorBody(backwards, 400, 'invalid_parameter');
    expect(backwards.body.errors[0]).toMatchObject({ field: 'from' });
    const page = await list({ per_page: 3, page: 2 });
    expect(page.body.data.items.map((x: { amount_cents: number }) => x.amount_cents)).toEqual([1000]);
    expect(page.body.data._meta).toEqual({ page: 2, per_page: 3, total_pages: 2, total_items: 4 });
    expect(page.body.data._links.prev).toContain('page=1');
  });

  it('members see the payments of the invoices they may see; another organization’s never show', async () => {
    const mine = (await list({}, p.orgA.member.key)).body.data.items;
    expect(mine.map((x: { amount_cents: number }) => x.amount_cents)).toEqual([3000, 2000, 1000]);
    const theirs = await call(t.app, 'GET', '/api/payments', { key: p.orgB.admin.key });
    expect(theirs.body.data.items.map((x: { uid: string }) => x.uid)).toEqual([foreignPayment]);
    const all = await call(t.app, 'GET', '/api/payments', { key: admin(), query: { per_page: 100 } });
    expect(all.body.data.items.map((x: { uid: string }) => x.uid)).not.toContain(foreignPayment);
    expect((await list({ invoice_uid: foreignInvoice })).body.data.items).toEqual([]);
  });

  it('400 for a bad status, uid, date or range, and for unknown parameters', async () => {
    expectErrorBody(await list({ status: 'lost' }), 400);
    expectErrorBody(await list({ invoice_uid: 'nope' }), 400);
    expectErrorBody(await list({ from: '2031-13-01' }), 400);
    expectErrorBody(await list({ from: '2031-02-01', to: '2031-01-01' }), 400, 'invalid_parameter');
    expectErrorBody(await list({ per_page: 101 }), 400);
    expectErrorBody(await list({ sort: 'amount' }), 400, 'unknown_parameter');
  });

  it('organization_uid picks the organization of the list (else the default one), with the role there', async () => {
    const email = `both-${tag()}@example.test`;
    const inB = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgB.uid,
      email,
      fullName: 'Both',
      role: 'member',
    });
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgA.uid,
      email,
      fullName: 'Both',
      role: 'admin',
    });
    // Default organization orgB (the first): a member there, assigned nothing.
    expect((await list({}, inB.api_key)).body.data.items).toEqual([]);
    const inA = await list({ organization_uid: p.orgA.uid }, inB.api_key);
    expect(inA.status, inA.raw).toBe(200);
    expect(inA.body.data.items.map((x: { amount_cents: number }) => x.amount_cents)).toEqual([
      4000, 3000, 2000, 1000,
    ]);
  });

  commonRouteChecks(
    'GET /api/payments',
    {
      method: 'GET',
      url: () => '/api/payments',
      scope: 'invoices:read',
      foreignOrganizationUrl: () => `/api/payments?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('money changes racing on one invoice', () => {
  it('10 payments of 1/8 at once: exactly 8 succeed, the others are refused as overpayment; paid once', async () => {
    const inv = await newInvoice();
    const results = await Promise.all(Array.from({ length: 10 }, () => pay(inv.uid, 1250)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 201, 201, 201, 201, 201, 201, 422, 422]);
    for (const refused of results.filter((r) => r.status !== 201)) {
      expectErrorBody(refused, 422, 'validation_failed');
      expect(refused.body.errors[0]).toMatchObject({
        field: 'amount_cents',
        message: expect.stringContaining('exceeds the amount remaining'),
      });
    }
    const invoice = await invoiceOf(inv.uid);
    expect(money(invoice)).toEqual({
      status: 'paid',
      pre_payment_credit_notes_cents: 0,
      amount_due_cents: 10000,
      amount_paid_cents: 10000,
      amount_remaining_cents: 0,
    });
    const payments = (await get(`/api/invoices/${inv.uid}/payments`)).items;
    expect(payments).toHaveLength(8);
    expect(payments.reduce((sum: number, x: { amount_cents: number }) => sum + x.amount_cents, 0)).toBe(
      10000,
    );
    const audit = await auditOf(inv.uid);
    expect(audit.filter((e) => e.action === 'payment.recorded')).toHaveLength(8);
    expect(audit.filter((e) => e.action === 'invoice.status_changed')).toHaveLength(1);
    const events = await eventsOf(inv.uid);
    expect(events.filter((e) => e.type === 'invoice.status_changed')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'payment.recorded')).toHaveLength(8);
  });

  it('payments and credit notes at once never owe less than nothing; every total adds up', async () => {
    const inv = await newInvoice();
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 === 0 ? pay(inv.uid, 1250) : creditNote(inv.uid, { amount_cents: 1250, reason: 'other' }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(8);
    expect(results.filter((r) => r.status === 422)).toHaveLength(4);
    const invoice = await invoiceOf(inv.uid);
    expectConsistent(invoice);
    expect(invoice.amount_remaining_cents).toBe(0);
    expect(invoice.status).toBe('paid');
    const notes = (await get(`/api/invoices/${inv.uid}/credit-notes`)).items;
    const payments = (await get(`/api/invoices/${inv.uid}/payments`)).items;
    expect(notes.length + payments.length).toBe(8);
    expect(invoice.pre_payment_credit_notes_cents).toBe(notes.length * 1250);
    expect(invoice.amount_paid_cents).toBe(payments.length * 1250);
    expect((await auditOf(inv.uid)).filter((e) => e.action === 'invoice.status_changed')).toHaveLength(1);
  });

  it('refunds of one payment at once never refund more than it was', async () => {
    const inv = await newInvoice();
    const paymentUid = await payUid(inv.uid, 5000);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => refund(inv.uid, paymentUid, { amount_cents: 1000, reason: 'race' })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    const refused = results.filter((r) => r.status !== 201);
    // Refused as too much (422), or once nothing is left as already refunded (409).
    for (const r of refused) expect([409, 422], r.raw).toContain(r.status);
    const [payment] = (await get(`/api/invoices/${inv.uid}/payments`)).items;
    expect(payment).toMatchObject({ status: 'refunded', amount_refunded_cents: 5000, amount_net_cents: 0 });
    expect(payment.refunds).toHaveLength(5);
    expect(money(await invoiceOf(inv.uid))).toMatchObject({
      amount_paid_cents: 0,
      amount_remaining_cents: 10000,
    });
  });

  it('a refund, a void and a credit note racing payments on a paid invoice keep the totals exact', async () => {
    const inv = await newInvoice();
    const a = await payUid(inv.uid, 5000);
    const b = await payUid(inv.uid, 5000);
    const results = await Promise.all([
      refund(inv.uid, a, { amount_cents: 2000, reason: 'race' }),
      voidPayment(inv.uid, b, { reason: 'race' }),
      pay(inv.uid, 1000),
      creditNote(inv.uid, { amount_cents: 500, reason: 'other' }),
      pay(inv.uid, 1000),
    ]);
    // The refund and the void always go through; a payment or credit note may come too early (422).
    expect(results[0]!.status, results[0]!.raw).toBe(201);
    expect(results[1]!.status, results[1]!.raw).toBe(200);
    for (const r of results.slice(2)) expect([201, 422], r.raw).toContain(r.status);
    const invoice = await invoiceOf(inv.uid);
    expectConsistent(invoice);
    const payments = (await get(`/api/invoices/${inv.uid}/payments`)).items;
    const notes = (await get(`/api/invoices/${inv.uid}/credit-notes`)).items;
    expect(invoice.amount_paid_cents).toBe(
      payments.reduce((sum: number, x: { amount_net_cents: number }) => sum + x.amount_net_cents, 0),
    );
    expect(invoice.pre_payment_credit_notes_cents).toBe(
      notes.reduce((sum: number, x: { amount_cents: number }) => sum + x.amount_cents, 0),
    );
    expect(invoice.amount_remaining_cents).toBeGreaterThanOrEqual(0);
    expect(invoice.status).toBe(invoice.amount_remaining_cents === 0 ? 'paid' : 'open');
  });
});
