import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * The invoice lifecycles (issue 22 point 1; docs/invoices.md#lifecycle): the transition tables enforced
 * on every path that changes a status (PUT, create, a settling payment, a refund), the
 * status history and its route, and approval amount limits per role and user.
 */

let t: TestApp;
let p: Principals;
let admin: { uid: string; full_name: string };
let member: { uid: string; full_name: string };
let foreignInvoice: string;

const tag = () => crypto.randomBytes(4).toString('hex');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  admin = (await call(t.app, 'GET', '/api/me', { key: p.orgA.admin.key })).body.data.user;
  member = (await call(t.app, 'GET', '/api/me', { key: p.orgA.member.key })).body.data.user;
  foreignInvoice = (await create({ invoice_type: 'ACCOUNTS_RECEIVABLE', status: 'open' }, p.orgB.admin.key))
    .uid;
});
afterAll(async () => t?.close());

async function create(body: Record<string, unknown>, key = p.orgA.admin.key) {
  const res = await call(t.app, 'POST', '/api/invoices', {
    key,
    body: { invoice_number: `L-${tag()}`, currency: 'USD', tax_cents: 10_000, ...body },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
/** A receivable (default draft) or payable (default received), the member assigned and responsible. */
const receivable = (body: Record<string, unknown> = {}) =>
  create({ invoice_type: 'ACCOUNTS_RECEIVABLE', assignee_user_uids: [member.uid], ...body });
const payable = (body: Record<string, unknown> = {}, key = p.orgA.admin.key) =>
  create(
    {
      invoice_type: 'ACCOUNTS_PAYABLE',
      assignee_user_uids: [member.uid],
      responsible_user_uid: member.uid,
      ...body,
    },
    key,
  );
const put = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PUT', `/api/invoices/${uid}`, { key, body });
const move = async (uid: string, status: string, key = p.orgA.admin.key, extra = {}) => {
  const res = await put(uid, { status, ...extra }, key);
  expect(res.status, res.raw).toBe(200);
  expect(res.body.data.status).toBe(status);
  return res.body.data;
};
const get = async (uid: string) =>
  (await call(t.app, 'GET', `/api/invoices/${uid}`, { key: p.orgA.admin.key })).body.data;
const historyOf = (uid: string, key = p.orgA.admin.key, query: Record<string, number> = {}) =>
  call(t.app, 'GET', `/api/invoices/${uid}/status-history`, { key, query });
const moves = async (uid: string) =>
  (await historyOf(uid, p.orgA.admin.key, { per_page: 100 })).body.data.items.map(
    (h: { from_status: string | null; to_status: string }) => `${h.from_status ?? '∅'}→${h.to_status}`,
  );
const pay = (uid: string, amount_cents: number, key = p.orgA.admin.key) =>
  call(t.app, 'POST', `/api/invoices/${uid}/payments`, { key, body: { amount_cents } });
const setLimits = async (approval_limits: unknown) => {
  const res = await call(t.app, 'PATCH', `/api/organization/${p.orgA.uid}/settings`, {
    key: p.orgA.admin.key,
    body: { approval_limits },
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
};

function expectRefusedMove(
  res: Awaited<ReturnType<typeof put>>,
  from: string,
  to: string,
  allowed: string[],
) {
  const body = expectErrorBody(res, 409, 'invalid_transition') as ReturnType<typeof expectErrorBody> & {
    details: unknown;
  };
  expect(body.details).toEqual({ status: from, requested_status: to, allowed_statuses: allowed });
  expect(body.message).toContain(`from ${from} to ${to}`);
  expect(body.message).toContain(allowed.length > 0 ? allowed.join(', ') : 'none');
}

describe('the receivable lifecycle', () => {
  it('draft → open → uncollectible → open → paid, each move in the history', async () => {
    const inv = await receivable();
    expect(inv.status).toBe('draft');
    await move(inv.uid, 'open');
    await move(inv.uid, 'uncollectible');
    await move(inv.uid, 'open');
    const paid = await move(inv.uid, 'paid');
    expect(paid.paid_date).toMatch(ISO);
    expect(await moves(inv.uid)).toEqual([
      '∅→draft',
      'draft→open',
      'open→uncollectible',
      'uncollectible→open',
      'open→paid',
    ]);
  });

  it('a refused move is 409 naming the current status and the allowed ones; nothing changes', async () => {
    const draft = await receivable();
    expectRefusedMove(await put(draft.uid, { status: 'paid', invoice_link: 'x' }), 'draft', 'paid', [
      'open',
      'void',
    ]);
    expectRefusedMove(await put(draft.uid, { status: 'uncollectible' }), 'draft', 'uncollectible', [
      'open',
      'void',
    ]);
    expect(await get(draft.uid)).toEqual(draft);
    expect(await moves(draft.uid)).toEqual(['∅→draft']);

    const voided = await receivable({ status: 'void' });
    for (const to of ['draft', 'open', 'paid', 'uncollectible']) {
      expectRefusedMove(await put(voided.uid, { status: to }), 'void', to, []);
    }
    const open = await receivable({ status: 'open' });
    expectRefusedMove(await put(open.uid, { status: 'draft' }), 'open', 'draft', [
      'paid',
      'uncollectible',
      'void',
    ]);
  });

  it('the same status is no move: 200, no history row, no approval stamp', async () => {
    const inv = await receivable({ status: 'open' });
    const same = await put(inv.uid, { status: 'open', status_note: 'still open' });
    expect(same.status, same.raw).toBe(200);
    expect(await moves(inv.uid)).toEqual(['∅→open']);
    // Also for a status with no way out.
    const voided = await receivable({ status: 'void' });
    expect((await put(voided.uid, { status: 'void' })).status).toBe(200);
  });

  it('paid: settled by payments it stays paid; marked paid by hand it may be reopened', async () => {
    const settled = await receivable({ status: 'open' });
    expect((await pay(settled.uid, 10_000)).status).toBe(201);
    expectRefusedMove(await put(settled.uid, { status: 'open' }), 'paid', 'open', []);

    const byHand = await receivable({ status: 'open' });
    expect((await move(byHand.uid, 'paid')).amount_remaining_cents).toBe(10_000);
    const reopened = await move(byHand.uid, 'open', p.orgA.admin.key, { status_note: 'not actually paid' });
    expect(reopened.paid_date).toBeNull();
    expectRefusedMove(await put(byHand.uid, { status: 'draft' }), 'open', 'draft', [
      'paid',
      'uncollectible',
      'void',
    ]);
  });
});

describe('the payable lifecycle', () => {
  it('received → in_review → approved → registered → scheduled → paid', async () => {
    const ap = await payable();
    expect(ap.status).toBe('received');
    await move(ap.uid, 'in_review');
    const approved = await move(ap.uid, 'approved');
    expect(approved.approved_by).toEqual(expect.any(Number));
    const registered = await move(ap.uid, 'registered');
    expect(registered.registered_by).toEqual(expect.any(Number));
    await move(ap.uid, 'scheduled');
    const paid = await move(ap.uid, 'paid');
    expect(paid.paid_date).toMatch(ISO);
    expect(await moves(ap.uid)).toEqual([
      '∅→received',
      'received→in_review',
      'in_review→approved',
      'approved→registered',
      'registered→scheduled',
      'scheduled→paid',
    ]);
  });

  it('review, registration and scheduling may be skipped; approval may not', async () => {
    const quick = await payable();
    await move(quick.uid, 'approved');
    await move(quick.uid, 'paid');

    const ap = await payable();
    expectRefusedMove(await put(ap.uid, { status: 'registered' }), 'received', 'registered', [
      'in_review',
      'approved',
      'rejected',
      'void',
    ]);
    expectRefusedMove(await put(ap.uid, { status: 'paid' }), 'received', 'paid', [
      'in_review',
      'approved',
      'rejected',
      'void',
    ]);
    await move(ap.uid, 'in_review');
    expectRefusedMove(await put(ap.uid, { status: 'scheduled' }), 'in_review', 'scheduled', [
      'received',
      'approved',
      'rejected',
      'void',
    ]);
  });

  it('rejected goes back to review or is voided; void and paid are final', async () => {
    const ap = await payable();
    await move(ap.uid, 'rejected', p.orgA.admin.key, { status_note: 'wrong PO' });
    expectRefusedMove(await put(ap.uid, { status: 'approved' }), 'rejected', 'approved', [
      'in_review',
      'void',
    ]);
    await move(ap.uid, 'in_review');
    await move(ap.uid, 'void');
    expectRefusedMove(await put(ap.uid, { status: 'received' }), 'void', 'received', []);

    const paid = await payable({ status: 'approved' });
    expect((await pay(paid.uid, 10_000)).body.data.status).toBe('paid');
    expectRefusedMove(await put(paid.uid, { status: 'scheduled' }), 'paid', 'scheduled', []);
    // Marked paid by hand (created paid, nothing paid): it may go back to where it came from.
    const byHand = await payable({ status: 'paid' });
    expect((await move(byHand.uid, 'scheduled')).paid_date).toBeNull();
  });

  it('a payment needs an approved payable; one that settles it moves it to paid, in the history', async () => {
    const ap = await payable();
    const refused = expectErrorBody(await pay(ap.uid, 100), 409, 'invalid_state');
    expect(refused.message).toContain('approved, registered, scheduled, paid');
    expect((await get(ap.uid)).amount_paid_cents).toBe(0);
    await move(ap.uid, 'approved');
    await move(ap.uid, 'registered');
    expect((await pay(ap.uid, 10_000)).body.data.status).toBe('paid');
    expect(await moves(ap.uid)).toEqual([
      '∅→received',
      'received→approved',
      'approved→registered',
      'registered→paid',
    ]);
  });

  it('approving still needs an admin or the responsible user (403 forbidden before any limit)', async () => {
    const ap = await payable({ responsible_user_uid: null });
    expectErrorBody(await put(ap.uid, { status: 'approved' }, p.orgA.member.key), 403, 'forbidden');
    expect((await get(ap.uid)).status).toBe('received');
    expect(await moves(ap.uid)).toEqual(['∅→received']);
  });
});

describe('the status history', () => {
  it('who, when, from, to, why and the note; creation from null; a payment as its reason', async () => {
    const t0 = Date.now();
    const inv = await receivable({ status: 'draft', status_note: 'entered from the paper copy' });
    await move(inv.uid, 'open', p.orgA.member.key, { status_note: 'sent to the client' });
    expect((await pay(inv.uid, 4_000, p.orgA.member.key)).body.data).toMatchObject({
      status: 'open',
      amount_paid_cents: 4_000,
      amount_remaining_cents: 6_000,
    });
    // A partial payment is no status change (partially paid: open, something paid, something left).
    expect(await moves(inv.uid)).toEqual(['∅→draft', 'draft→open']);
    expect((await pay(inv.uid, 6_000)).body.data.status).toBe('paid');

    const res = await historyOf(inv.uid);
    expect(res.status, res.raw).toBe(200);
    const [created, opened, paid] = res.body.data.items;
    expect(created).toEqual({
      uid: expect.any(String),
      invoice_uid: inv.uid,
      position: 1,
      from_status: null,
      to_status: 'draft',
      reason: 'created',
      note: 'entered from the paper copy',
      actor: { type: 'api_key', uid: expect.any(String), user_uid: admin.uid, name: admin.full_name },
      changed_at: expect.stringMatching(ISO),
    });
    expect(Date.parse(created.changed_at)).toBeGreaterThanOrEqual(t0 - 1000);
    expect(opened).toMatchObject({
      position: 2,
      from_status: 'draft',
      to_status: 'open',
      reason: 'update',
      note: 'sent to the client',
      actor: { type: 'api_key', user_uid: member.uid, name: member.full_name },
    });
    expect(opened.actor.uid).not.toBe(created.actor.uid);
    expect(paid).toMatchObject({
      position: 3,
      from_status: 'open',
      to_status: 'paid',
      reason: 'payment',
      note: null,
      actor: { type: 'api_key', user_uid: admin.uid },
    });
    expect(res.body.data._meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 3 });
  });

  it('pages like the other lists', async () => {
    const inv = await receivable();
    await move(inv.uid, 'open');
    await move(inv.uid, 'uncollectible');
    const first = await historyOf(inv.uid, p.orgA.admin.key, { per_page: 2 });
    expect(first.body.data.items.map((h: { position: number }) => h.position)).toEqual([1, 2]);
    expect(first.body.data._meta).toEqual({ page: 1, per_page: 2, total_pages: 2, total_items: 3 });
    expect(first.body.data._links.next).toContain('page=2');
    const second = await historyOf(inv.uid, p.orgA.admin.key, { per_page: 2, page: 2 });
    expect(second.body.data.items.map((h: { to_status: string }) => h.to_status)).toEqual(['uncollectible']);
    expectErrorBody(await historyOf(inv.uid, p.orgA.admin.key, { per_page: 101 }), 400, 'invalid_parameter');
  });

  it('a status_note without a status is 422; an empty one too', async () => {
    const inv = await receivable();
    const body = expectErrorBody(await put(inv.uid, { status_note: 'why?' }), 422, 'validation_failed');
    expect(body.errors?.[0]?.field).toBe('status_note');
    expectErrorBody(await put(inv.uid, { status: 'open', status_note: '' }), 422, 'validation_failed');
    expect(await moves(inv.uid)).toEqual(['∅→draft']);
  });

  it('a refund reopens a paid invoice (a reversal PUT may not make), recorded with its reason', async () => {
    const inv = await receivable({ status: 'open' });
    await pay(inv.uid, 10_000);
    // Settled by its payments: no way back out of paid through PUT.
    expectErrorBody(await put(inv.uid, { status: 'open' }), 409, 'invalid_transition');
    const payments = await call(t.app, 'GET', `/api/invoices/${inv.uid}/payments`, { key: p.orgA.admin.key });
    const paymentUid = payments.body.data.items[0].uid as string;
    const refund = (amount_cents: number) =>
      call(t.app, 'POST', `/api/invoices/${inv.uid}/payments/${paymentUid}/refund`, {
        key: p.orgA.admin.key,
        body: { amount_cents, reason: 'refund R-1' },
      });
    const first = await refund(1_000);
    expect(first.status, first.raw).toBe(201);
    expect(first.body.data.invoice).toMatchObject({ status: 'open', paid_date: null });
    const items = (await historyOf(inv.uid)).body.data.items;
    expect(items.at(-1)).toMatchObject({
      from_status: 'paid',
      to_status: 'open',
      reason: 'payment_refunded',
      note: null,
      actor: { type: 'api_key', user_uid: admin.uid },
    });
    // Open already: a second refund moves nothing and adds no history row.
    expect((await refund(1_000)).body.data.invoice.status).toBe('open');
    expect((await historyOf(inv.uid)).body.data._meta.total_items).toBe(items.length);
  });

  it('allowed_next_statuses: what a PUT from the caller would accept now, reversals only where it would', async () => {
    const allowed = async (uid: string, key = p.orgA.admin.key) => {
      const res = await historyOf(uid, key);
      expect(res.status, res.raw).toBe(200);
      return res.body.data.allowed_next_statuses as string[];
    };
    const ar = await receivable();
    expect(await allowed(ar.uid)).toEqual(['open', 'void']);
    expect(await allowed(ar.uid, p.orgA.member.key)).toEqual(['open', 'void']);
    await move(ar.uid, 'open');
    expect(await allowed(ar.uid)).toEqual(['paid', 'uncollectible', 'void']);
    // Settled by a payment: paid for good (no reversal through PUT).
    await pay(ar.uid, 10_000);
    expect(await allowed(ar.uid)).toEqual([]);
    // Marked paid by hand, still owing: it may be reopened, as PUT accepts.
    const byHand = await receivable({ status: 'open' });
    await move(byHand.uid, 'paid');
    expect(await allowed(byHand.uid)).toEqual(['open']);
    expect((await put(byHand.uid, { status: 'open' })).status).toBe(200);

    const ap = await payable();
    expect(await allowed(ap.uid)).toEqual(['in_review', 'approved', 'rejected', 'void']);
    expect(await allowed(ap.uid)).not.toContain('paid');
    await move(ap.uid, 'approved');
    expect(await allowed(ap.uid)).toEqual(['registered', 'scheduled', 'paid', 'void']);
    const apByHand = await payable({ status: 'paid' });
    expect(await allowed(apByHand.uid)).toEqual(['approved', 'registered', 'scheduled']);
    await move(apByHand.uid, 'scheduled');
    expect(await allowed(apByHand.uid)).toEqual(['approved', 'registered', 'paid', 'void']);
    // The invoice itself does not carry it (the interface's shape).
    expect(await get(ap.uid)).not.toHaveProperty('allowed_next_statuses');
  });

  it('a member reads the history of an invoice assigned to them only; another organization’s is 404', async () => {
    const mine = await receivable();
    expect((await historyOf(mine.uid, p.orgA.member.key)).status).toBe(200);
    const notMine = await receivable({ assignee_user_uids: [] });
    expectErrorBody(await historyOf(notMine.uid, p.orgA.member.key), 404, 'not_found');
    expectErrorBody(await historyOf(foreignInvoice), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/invoices/{uid}/status-history',
    {
      method: 'GET',
      url: async () => `/api/invoices/${(await receivable()).uid}/status-history`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/status-history`,
    },
    () => ({ t, p }),
  );
});

describe('approval limits', () => {
  // Payables of 5,000.00 and 5,000.01 (tax only).
  const atLimit = () => payable({ tax_cents: 500_000 });
  const overLimit = () => payable({ tax_cents: 500_001 });

  it('settings: none at first; PATCH replaces the whole setting; members named must belong', async () => {
    // An organization of its own for "none at first": the other tests set orgA's limits, in any order.
    const fresh = await createPrincipals(t);
    const read = await call(t.app, 'GET', `/api/organization/${fresh.orgA.uid}/settings`, {
      key: fresh.orgA.member.key,
    });
    expect(read.body.data.approval_limits).toEqual({ roles: { admin: null, member: null }, users: [] });
    const set = await setLimits({ roles: { member: 500_000 } });
    expect(set.approval_limits).toEqual({ roles: { admin: null, member: 500_000 }, users: [] });

    const outsider = (await call(t.app, 'GET', '/api/me', { key: p.orgB.member.key })).body.data.user.uid;
    for (const users of [
      [{ user_uid: outsider, limit_cents: 1 }],
      [
        { user_uid: member.uid, limit_cents: 1 },
        { user_uid: member.uid, limit_cents: 2 },
      ],
    ]) {
      const res = await call(t.app, 'PATCH', `/api/organization/${p.orgA.uid}/settings`, {
        key: p.orgA.admin.key,
        body: { approval_limits: { roles: { member: 1 }, users } },
      });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toMatch(/^approval_limits\.users\.\d\.user_uid$/);
    }
    for (const approval_limits of [
      { roles: { member: -1 } },
      { roles: { owner: 5 } },
      { users: [{ user_uid: member.uid }] },
    ]) {
      const res = await call(t.app, 'PATCH', `/api/organization/${p.orgA.uid}/settings`, {
        key: p.orgA.admin.key,
        body: { approval_limits },
      });
      expectErrorBody(res, 422, 'validation_failed');
    }
    // Unchanged by the refusals; a member may not change it.
    const member403 = await call(t.app, 'PATCH', `/api/organization/${p.orgA.uid}/settings`, {
      key: p.orgA.member.key,
      body: { approval_limits: { roles: { member: null } } },
    });
    expectErrorBody(member403, 403);
    const again = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/settings`, {
      key: p.orgA.admin.key,
    });
    expect(again.body.data.approval_limits).toEqual(set.approval_limits);
  });

  it('a member approves up to their role’s limit; over it is 403 naming the limit, and nothing moves', async () => {
    await setLimits({ roles: { member: 500_000 } });
    const ok = await atLimit();
    await move(ok.uid, 'approved', p.orgA.member.key);

    const big = await overLimit();
    const res = await put(big.uid, { status: 'approved' }, p.orgA.member.key);
    const body = expectErrorBody(res, 403, 'approval_limit_exceeded') as {
      message: string;
      details?: unknown;
    };
    expect(body.message).toContain('5000.00');
    expect(body.message).toContain("member role's approval limit");
    expect(body.details).toEqual({
      limit_cents: 500_000,
      limit_source: 'role',
      role: 'member',
      total_cents: 500_001,
      currency: 'USD',
    });
    expect(await get(big.uid)).toMatchObject({ status: 'received', approved_by: null });
    expect(await moves(big.uid)).toEqual(['∅→received']);
    // An admin (unlimited) approves it.
    await move(big.uid, 'approved');
  });

  it('the limit is on the total after the update: raising the tax in the same PUT counts', async () => {
    await setLimits({ roles: { member: 500_000 } });
    const ap = await atLimit();
    expectErrorBody(
      await put(ap.uid, { status: 'approved', tax_cents: 600_000 }, p.orgA.member.key),
      403,
      'approval_limit_exceeded',
    );
    expect((await get(ap.uid)).tax_cents).toBe(500_000);
  });

  it('raising an approved payable’s total needs a limit covering the new total; lowering it does not', async () => {
    await setLimits({ roles: { member: 500_000 } });
    const ap = await atLimit();
    await move(ap.uid, 'approved', p.orgA.member.key);
    expectErrorBody(
      await put(ap.uid, { tax_cents: 500_001 }, p.orgA.member.key),
      403,
      'approval_limit_exceeded',
    );
    expect(await get(ap.uid)).toMatchObject({ status: 'approved', tax_cents: 500_000 });
    expect((await put(ap.uid, { tax_cents: 400_000 }, p.orgA.member.key)).status).toBe(200);
    // An admin (unlimited) may raise it; a payable not yet approved stands on no approval.
    expect((await put(ap.uid, { tax_cents: 900_000 })).status).toBe(200);
    const received = await atLimit();
    expect((await put(received.uid, { tax_cents: 900_000 }, p.orgA.member.key)).status).toBe(200);
  });

  it('a per-user limit overrides the role’s, for members and admins alike', async () => {
    await setLimits({
      roles: { member: 500_000, admin: null },
      users: [
        { user_uid: member.uid, limit_cents: 1_000_000 },
        { user_uid: admin.uid, limit_cents: 100 },
      ],
    });
    await move((await overLimit()).uid, 'approved', p.orgA.member.key);
    const ap = await overLimit();
    const body = expectErrorBody(
      await put(ap.uid, { status: 'approved' }),
      403,
      'approval_limit_exceeded',
    ) as {
      message: string;
      details?: Record<string, unknown>;
    };
    expect(body.message).toContain('your own approval limit');
    expect(body.details).toMatchObject({ limit_cents: 100, limit_source: 'user', role: 'admin' });
    // A null override: unlimited for that user.
    await setLimits({ roles: { member: 0 }, users: [{ user_uid: member.uid, limit_cents: null }] });
    await move((await overLimit()).uid, 'approved', p.orgA.member.key);
  });

  it('a key acts with its user’s limit; creating a payable approved counts as approving it', async () => {
    await setLimits({ roles: { member: 500_000 } });
    const scoped = await p.keyWithScopes(['invoices:read', 'invoices:write'], 'member');
    expectErrorBody(
      await put((await overLimit()).uid, { status: 'approved' }, scoped),
      403,
      'approval_limit_exceeded',
    );
    // Created approved over the creator's limit: refused, nothing written.
    const number = `L-${tag()}`;
    const res = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgA.member.key,
      body: {
        invoice_type: 'ACCOUNTS_PAYABLE',
        invoice_number: number,
        currency: 'USD',
        status: 'approved',
        tax_cents: 500_001,
        responsible_user_uid: member.uid,
      },
    });
    expectErrorBody(res, 403, 'approval_limit_exceeded');
    const list = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/ap-invoices`, {
      key: p.orgA.admin.key,
      query: { invoice_number: number },
    });
    expect(list.body.items).toEqual([]);
    // Within it, or by an admin: created approved as before.
    expect((await payable({ status: 'approved', tax_cents: 500_000 }, p.orgA.member.key)).status).toBe(
      'approved',
    );
    await setLimits({ roles: {} });
  });

  it('creating a payable approved or past it is approving it: the same rights, limits and segregation', async () => {
    const post = (body: Record<string, unknown>, key: string) =>
      call(t.app, 'POST', '/api/invoices', {
        key,
        body: { invoice_type: 'ACCOUNTS_PAYABLE', invoice_number: `L-${tag()}`, currency: 'USD', ...body },
      });
    await setLimits({ roles: { admin: 500_000 } });
    for (const status of ['approved', 'registered', 'scheduled', 'paid']) {
      // An admin below the total: refused as the move is.
      const over = await post({ status, tax_cents: 500_001 }, p.orgA.admin.key);
      expect((over.body as { details?: unknown }).details).toMatchObject({
        limit_cents: 500_000,
        role: 'admin',
      });
      expectErrorBody(over, 403, 'approval_limit_exceeded');
      // A member who is not its responsible user: refused as the move is.
      expectErrorBody(await post({ status, tax_cents: 100 }, p.orgA.member.key), 403, 'forbidden');
      // Within the limit: created; created approved, the creator is recorded as its approver (an
      // approval date is only that of a move to approved, never invented for a later status).
      const ok = await post({ status, tax_cents: 500_000 }, p.orgA.admin.key);
      expect(ok.status, ok.raw).toBe(201);
      expect(ok.body.data.status).toBe(status);
      if (status === 'approved') {
        expect(ok.body.data.approved_by).not.toBeNull();
        expect(ok.body.data.approval_date).toMatch(ISO);
      } else {
        expect(ok.body.data.approved_by).toBeNull();
      }
    }
    await setLimits({ roles: {} });
    // Up to in_review nothing is approved: a member creates it.
    expect((await post({ status: 'in_review', tax_cents: 100 }, p.orgA.member.key)).status).toBe(201);
    // Segregation of duties: whoever enters a payable cannot create it approved or past it, admin or not.
    const sod = (on: boolean) =>
      call(t.app, 'PATCH', `/api/organization/${p.orgA.uid}/settings`, {
        key: p.orgA.admin.key,
        body: { segregation_of_duties: on },
      });
    expect((await sod(true)).status).toBe(200);
    try {
      for (const status of ['approved', 'paid']) {
        const res = await post({ status, tax_cents: 100 }, p.orgA.admin.key);
        expect(expectErrorBody(res, 403, 'forbidden').message).toContain('Segregation of duties');
      }
      expect((await post({ status: 'received', tax_cents: 100 }, p.orgA.admin.key)).status).toBe(201);
    } finally {
      expect((await sod(false)).status).toBe(200);
    }
  });

  it('receivables have no approval, and other moves of a payable ignore the limit', async () => {
    await setLimits({ roles: { member: 0, admin: 0 } });
    const refused = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgA.admin.key,
      body: {
        invoice_type: 'ACCOUNTS_PAYABLE',
        invoice_number: `L-${tag()}`,
        currency: 'USD',
        status: 'approved',
        tax_cents: 1,
      },
    });
    expectErrorBody(refused, 403, 'approval_limit_exceeded');
    // A zero total is within a zero limit.
    expect((await payable({ status: 'approved', tax_cents: 0 })).status).toBe('approved');
    const approved = await payable();
    await setLimits({ roles: {} });
    await move(approved.uid, 'approved');
    await setLimits({ roles: { member: 0, admin: 0 } });
    await move(approved.uid, 'registered');
    const ar = await receivable();
    await move(ar.uid, 'open');
    await setLimits({ roles: {} });
  });
});
