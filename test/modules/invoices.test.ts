import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let adminId: number;
let memberId: number;
let client: Party;
let vendor: Party;
let foreignInvoice: string;
let foreignParty: string;

interface Party {
  uid: string;
  name: string;
  address: string;
  role: string;
  billing_contact: Record<string, unknown> | null;
}

const DAY = 86_400_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => crypto.randomBytes(4).toString('hex');
const daysAgo = (n: number) => new Date(Date.now() - n * DAY).toISOString();
/** Whole UTC days from `iso` to today, as the contract computes overdue_days and age. */
const utcDaysSince = (iso: string) => Math.floor(Date.now() / DAY) - Math.floor(Date.parse(iso) / DAY);

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  adminId = (await call(t.app, 'GET', '/api/me', { key: p.orgA.admin.key })).body.data.user.id;
  memberId = (await call(t.app, 'GET', '/api/me', { key: p.orgA.member.key })).body.data.user.id;
  const key = p.orgA.admin.key;
  client = await post(key, '/api/parties', {
    name: 'Client Co',
    role: 'client',
    address: '1 Client Way',
    tax_id: 'CL-1',
    billing_contact: { name: 'Cara', title: 'Controller', email: 'cara@client.test', phone: '555-0101' },
  });
  vendor = await post(key, '/api/parties', {
    name: 'Vendor Inc',
    role: 'vendor',
    address: '9 Vendor Road',
    tax_id: 'NIT-9',
    billing_contact: { name: 'Vic', title: 'Sales', email: 'vic@vendor.test', phone: '555-0909' },
  });
  const product = (sku: string, name: string, context_type: string, unit_price: number) =>
    post(key, '/api/products', { sku, name, context_type, unit_price, currency: 'USD' });
  await product('WIDGET', 'Widget', 'PRODUCT', 1250);
  await product('HOUR', 'Consulting hour', 'PRODUCT', 15000);
  await product('LOYAL', 'Loyalty discount', 'DISCOUNT', 500);
  foreignParty = (await post(p.orgB.admin.key, '/api/parties', { name: 'B client', role: 'client' })).uid;
  foreignInvoice = (
    await post(p.orgB.admin.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: 'B-1',
      currency: 'USD',
      invoice_link: 'https://b.test/1',
    })
  ).uid;
});
afterAll(async () => t?.close());

async function post(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const createInvoice = (body: Record<string, unknown>, key = p.orgA.admin.key) =>
  call(t.app, 'POST', '/api/invoices', {
    key,
    body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `INV-${tag()}`, currency: 'USD', ...body },
  });
async function newInvoice(body: Record<string, unknown> = {}, key = p.orgA.admin.key) {
  const res = await createInvoice(body, key);
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const getInvoice = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'GET', `/api/invoices/${uid}`, { key });
const putInvoice = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PUT', `/api/invoices/${uid}`, { key, body });

/** Interface 2.11, field by field: every field present with its type. */
function expectInvoiceShape(inv: Record<string, unknown>) {
  const problems: string[] = [];
  const check = (field: string, ok: (v: unknown) => boolean) => {
    if (!(field in inv)) problems.push(`${field} missing`);
    else if (!ok(inv[field])) problems.push(`${field} has the wrong type: ${JSON.stringify(inv[field])}`);
  };
  const str = (v: unknown) => typeof v === 'string';
  const uuidOrNull = (v: unknown) => v === null || (str(v) && UUID.test(v as string));
  const isoOrNull = (v: unknown) => v === null || (str(v) && ISO.test(v as string));
  const int = (v: unknown) => Number.isInteger(v);
  const obj = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  check('uid', (v) => str(v) && UUID.test(v as string));
  check('invoice_number', str);
  check('invoice_type', (v) => v === 'ACCOUNTS_RECEIVABLE' || v === 'ACCOUNTS_PAYABLE');
  check('status', str);
  check('collection_method', (v) => v === 'charge_automatically' || v === 'send_invoice');
  for (const f of ['issue_date', 'due_date', 'paid_date']) check(f, isoOrNull);
  for (const f of [
    'subtotal_cents',
    'discount_cents',
    'tax_cents',
    'total',
    'total_cents',
    'pre_payment_credit_notes_cents',
    'amount_due_cents',
    'amount_paid_cents',
    'amount_remaining_cents',
    'overdue_days',
    'age',
  ])
    check(f, int);
  check('currency', (v) => str(v) && /^[A-Z]{3}$/.test(v as string));
  check('invoice_link', (v) => v === null || str(v));
  for (const f of ['document_uid', 'invoice_blueprint_uid', 'target_party_uid']) check(f, uuidOrNull);
  check('has_comments', (v) => typeof v === 'boolean');
  check('line_items', Array.isArray);
  check(
    'invoice_fields',
    (v) =>
      Array.isArray(v) &&
      v.every(
        (f) =>
          obj(f) &&
          str(f.key) &&
          obj(f.value) &&
          str(f.value.type) &&
          str(f.value.original_type) &&
          'value' in f.value,
      ),
  );
  const contact = (c: unknown) =>
    c === null ||
    (obj(c) &&
      UUID.test(c.uid as string) &&
      UUID.test(c.party_uid as string) &&
      ['name', 'title', 'email', 'phone'].every((k) => str(c[k])));
  const party = (v: unknown) =>
    v === null ||
    (obj(v) &&
      UUID.test(v.uid as string) &&
      str(v.name) &&
      str(v.address) &&
      str(v.role) &&
      'billing_contact' in v &&
      contact(v.billing_contact));
  check(
    'parties',
    (v) => obj(v) && 'client' in v && 'service_provider' in v && party(v.client) && party(v.service_provider),
  );
  check('integrations', Array.isArray);
  check('invoice_notes', (v) => obj(v) && str(v.invoice_memo) && str(v.invoice_footer));
  check('comments', Array.isArray);
  if (inv.total !== inv.total_cents) problems.push('total != total_cents');
  if (problems.length > 0) throw new Error(`Invoice shape: ${problems.join('; ')}\n${JSON.stringify(inv)}`);
}

/** `after` equals `before` except `changed` (and the bookkeeping every write moves). */
function expectOnlyChanged(before: Record<string, unknown>, after: Record<string, unknown>, changed: object) {
  expect(after).toEqual({
    ...before,
    ...changed,
    updated_at: expect.stringMatching(ISO),
    revision: before.revision === undefined ? undefined : expect.any(Number),
  });
  expect(Date.parse(after.updated_at as string)).toBeGreaterThanOrEqual(
    Date.parse(before.updated_at as string),
  );
}

describe('POST /api/invoices', () => {
  it('creates an invoice with every field of interface 2.11, money derived per CONTRACT §4', async () => {
    const issue = daysAgo(30);
    const due = daysAgo(10);
    const documentUid = crypto.randomUUID();
    const blueprintUid = crypto.randomUUID();
    const res = await createInvoice({
      invoice_number: 'AR-1001',
      status: 'open',
      collection_method: 'charge_automatically',
      currency: 'usd',
      issue_date: issue,
      due_date: due,
      client_party_uid: client.uid,
      service_provider_party_uid: vendor.uid,
      target_party_uid: client.uid,
      document_uid: documentUid,
      invoice_blueprint_uid: blueprintUid,
      invoice_link: 'https://pay.example.test/AR-1001',
      line_items: [
        { context_type: 'PRODUCT', sku: 'WIDGET', quantity: 2 },
        { context_type: 'PRODUCT', sku: 'HOUR', unit_price: 10000 },
        { context_type: 'DISCOUNT', sku: 'LOYAL' },
      ],
      tax_cents: 1900,
      pre_payment_credit_notes_cents: 1000,
      invoice_notes: { invoice_memo: 'Thanks!', invoice_footer: 'Pay within 30 days' },
      invoice_fields: {
        po_number: 'PO-7',
        priority: 2,
        rate: 1.5,
        urgent: true,
        delivered_on: '2026-01-05',
        meta: { a: 1 },
        tags: ['x'],
      },
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    const inv = res.body.data;
    expectInvoiceShape(inv);
    expect(inv).toMatchObject({
      organization_uid: p.orgA.uid,
      invoice_number: 'AR-1001',
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      status: 'open',
      collection_method: 'charge_automatically',
      issue_date: issue,
      due_date: due,
      paid_date: null,
      // subtotal = 2 × 1250 + 1 × 10000; discount = 500; total = 12500 − 500 + 1900;
      // due = total − 1000 credit notes; nothing paid yet.
      subtotal_cents: 12500,
      discount_cents: 500,
      tax_cents: 1900,
      total: 13900,
      total_cents: 13900,
      pre_payment_credit_notes_cents: 1000,
      amount_due_cents: 12900,
      amount_paid_cents: 0,
      amount_remaining_cents: 12900,
      overdue_days: 10,
      age: 30,
      currency: 'USD',
      invoice_link: 'https://pay.example.test/AR-1001',
      document_uid: documentUid,
      invoice_blueprint_uid: blueprintUid,
      target_party_uid: client.uid,
      has_comments: false,
      integrations: [],
      comments: [],
      invoice_notes: { invoice_memo: 'Thanks!', invoice_footer: 'Pay within 30 days' },
      vendor_name: 'Vendor Inc',
      vendor_nit: 'NIT-9',
    });
    expect(inv.parties).toEqual({
      client: {
        uid: client.uid,
        name: 'Client Co',
        address: '1 Client Way',
        role: 'client',
        billing_contact: client.billing_contact,
      },
      service_provider: {
        uid: vendor.uid,
        name: 'Vendor Inc',
        address: '9 Vendor Road',
        role: 'vendor',
        billing_contact: vendor.billing_contact,
      },
    });
    expect(inv.parties.client.billing_contact).toEqual({
      uid: expect.stringMatching(UUID),
      party_uid: client.uid,
      name: 'Cara',
      title: 'Controller',
      email: 'cara@client.test',
      phone: '555-0101',
    });
    expect(inv.invoice_fields).toEqual([
      { key: 'delivered_on', value: { type: 'date', original_type: 'string', value: '2026-01-05' } },
      { key: 'meta', value: { type: 'object', original_type: 'object', value: { a: 1 } } },
      { key: 'po_number', value: { type: 'string', original_type: 'string', value: 'PO-7' } },
      { key: 'priority', value: { type: 'number', original_type: 'integer', value: 2 } },
      { key: 'rate', value: { type: 'number', original_type: 'number', value: 1.5 } },
      { key: 'tags', value: { type: 'array', original_type: 'array', value: ['x'] } },
      { key: 'urgent', value: { type: 'boolean', original_type: 'boolean', value: true } },
    ]);
    expect(inv.line_items).toHaveLength(3);
    const bySku = Object.fromEntries(inv.line_items.map((l: { sku: string }) => [l.sku, l]));
    expect(bySku.WIDGET).toMatchObject({
      quantity: 2,
      unit_price: 1250,
      line_total: 2500,
      context_type: 'PRODUCT',
    });
    expect(bySku.HOUR).toMatchObject({ quantity: 1, unit_price: 10000, line_total: 10000 });
    expect(bySku.LOYAL).toMatchObject({
      quantity: 1,
      unit_price: 500,
      line_total: 500,
      context_type: 'DISCOUNT',
    });
    for (const line of inv.line_items) {
      expect(line).toMatchObject({ uid: expect.stringMatching(UUID), invoice_uid: inv.uid, currency: 'USD' });
    }

    const got = await getInvoice(inv.uid);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ status: 'success', status_code: 200 });
    expectInvoiceShape(got.body.data);
    expect(got.body.data).toEqual(inv);
  });

  it('defaults: receivable draft, payable received, send_invoice, empty notes, no parties, zero money', async () => {
    const ar = await newInvoice();
    expectInvoiceShape(ar);
    expect(ar).toMatchObject({
      status: 'draft',
      collection_method: 'send_invoice',
      issue_date: null,
      due_date: null,
      paid_date: null,
      invoice_link: null,
      document_uid: null,
      invoice_blueprint_uid: null,
      target_party_uid: null,
      parties: { client: null, service_provider: null },
      invoice_notes: { invoice_memo: '', invoice_footer: '' },
      invoice_fields: [],
      line_items: [],
      subtotal_cents: 0,
      total_cents: 0,
      amount_due_cents: 0,
      amount_remaining_cents: 0,
      overdue_days: 0,
      age: 0,
    });
    const ap = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE' });
    expect(ap).toMatchObject({ invoice_type: 'ACCOUNTS_PAYABLE', status: 'received', approved_by: null });
  });

  it('overdue_days and age count whole days from today', async () => {
    const due = daysAgo(10);
    const issue = daysAgo(45);
    const inv = await newInvoice({
      status: 'open',
      issue_date: issue,
      due_date: due,
      line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET' }],
    });
    expect(inv.overdue_days).toBe(utcDaysSince(due));
    expect(inv.overdue_days).toBe(10);
    expect(inv.age).toBe(utcDaysSince(issue));
    expect(inv.age).toBe(45);

    // A date without a time is that day at midnight UTC.
    const dueDay = new Date(Date.now() - 3 * DAY).toISOString().slice(0, 10);
    const byDay = await newInvoice({
      status: 'open',
      issue_date: dueDay,
      due_date: dueDay,
      line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET' }],
    });
    expect(byDay).toMatchObject({ due_date: `${dueDay}T00:00:00.000Z`, overdue_days: 3, age: 3 });

    const notYetDue = await newInvoice({
      status: 'open',
      issue_date: daysAgo(0),
      due_date: new Date(Date.now() + 5 * DAY).toISOString(),
      line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET' }],
    });
    expect(notYetDue).toMatchObject({ overdue_days: 0, age: 0 });
  });

  it('accepts exactly the statuses of its type (CONTRACT §3)', async () => {
    for (const status of ['draft', 'open', 'paid', 'void', 'uncollectible']) {
      expect((await newInvoice({ status })).status).toBe(status);
    }
    // Payables have scheduled and void too (issue 22; docs/invoices.md#lifecycle).
    for (const status of [
      'received',
      'in_review',
      'approved',
      'registered',
      'scheduled',
      'paid',
      'rejected',
      'void',
    ]) {
      expect((await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status })).status).toBe(status);
    }
    for (const status of [
      'approved',
      'received',
      'in_review',
      'registered',
      'scheduled',
      'rejected',
      'bogus',
    ]) {
      const body = expectErrorBody(await createInvoice({ status }), 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toBe('status');
    }
    for (const status of ['draft', 'open', 'uncollectible', 'bogus']) {
      expectErrorBody(
        await createInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status }),
        422,
        'validation_failed',
      );
    }
  });

  it('a payable created approved or registered records who and when', async () => {
    const before = Date.now();
    const approved = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status: 'approved' });
    expect(approved.approved_by).toBe(adminId);
    expect(Date.parse(approved.approval_date)).toBeGreaterThanOrEqual(before - 1000);
    expect(approved.registered_by).toBeNull();
    const registered = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', status: 'registered' });
    expect(registered).toMatchObject({ registered_by: adminId, approved_by: null });
    expect(Date.parse(registered.registration_date)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('an invoice created paid has a paid_date (now), as one moved to paid by PUT', async () => {
    const before = Date.now();
    for (const invoice_type of ['ACCOUNTS_RECEIVABLE', 'ACCOUNTS_PAYABLE']) {
      const paid = await newInvoice({ invoice_type, status: 'paid' });
      expect(paid.paid_date).toMatch(ISO);
      expect(Date.parse(paid.paid_date)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(paid.paid_date)).toBeLessThanOrEqual(Date.now());
    }
    const open = await newInvoice({ status: 'open' });
    expect(open.paid_date).toBeNull();
    const moved = (await putInvoice(open.uid, { status: 'paid' })).body.data;
    expect(Date.parse(moved.paid_date)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(moved.paid_date)).toBeLessThanOrEqual(Date.now());
  });

  it('409 for a receivable invoice_number already used in the organization; payables may repeat', async () => {
    const number = `DUP-${tag()}`;
    await newInvoice({ invoice_number: number });
    const body = expectErrorBody(await createInvoice({ invoice_number: number }), 409, 'already_exists');
    expect(body.message).toContain(number);
    // Payable numbers are the vendors' and may repeat, also the receivable one.
    await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', invoice_number: number });
    await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', invoice_number: number });
    // Another organization has its own numbering.
    await newInvoice({ invoice_number: number }, p.orgB.admin.key);
  });

  it('422 for a bad body; nothing is created', async () => {
    const bad: Record<string, unknown>[] = [
      { currency: 'US' },
      { currency: 'USDD' },
      { currency: '12$' },
      { invoice_type: 'RECEIVABLE' },
      { invoice_number: '' },
      { collection_method: 'cash' },
      { due_date: 'yesterday' },
      { tax_cents: -1 },
      { tax_cents: 1.5 },
      { line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET', quantity: -1 }] },
    ];
    for (const body of bad) expectErrorBody(await createInvoice(body), 422, 'validation_failed');
    expectErrorBody(
      await call(t.app, 'POST', '/api/invoices', {
        key: p.orgA.admin.key,
        body: { invoice_type: 'ACCOUNTS_RECEIVABLE', currency: 'USD' },
      }),
      422,
      'validation_failed',
    );

    // Problems found while resolving (unknown SKU, another organization's party) roll everything back.
    const number = `ROLLBACK-${tag()}`;
    const unknownSku = await createInvoice({
      invoice_number: number,
      line_items: [
        { context_type: 'PRODUCT', sku: 'WIDGET' },
        { context_type: 'PRODUCT', sku: 'NO-SUCH-SKU' },
      ],
    });
    expect(expectErrorBody(unknownSku, 422, 'validation_failed').errors?.[0]?.field).toBe(
      'line_items[1].sku',
    );
    const foreign = await createInvoice({ invoice_number: number, client_party_uid: foreignParty });
    expect(expectErrorBody(foreign, 422, 'validation_failed').errors?.[0]?.field).toBe('client_party_uid');
    // The number is still free: nothing was written.
    expect((await createInvoice({ invoice_number: number })).status).toBe(201);
  });

  commonRouteChecks(
    'POST /api/invoices',
    {
      method: 'POST',
      url: () => '/api/invoices',
      body: () => ({ invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `CHK-${tag()}`, currency: 'USD' }),
      scope: 'invoices:write',
      foreignOrganizationBody: ({ p }) => ({
        organization_uid: p.orgB.uid,
        invoice_type: 'ACCOUNTS_RECEIVABLE',
        invoice_number: `CHK-${tag()}`,
        currency: 'USD',
      }),
    },
    () => ({ t, p }),
  );
});

describe('GET /api/invoices/{uid}', () => {
  it('answers exactly the view the writes answer (one-statement read vs transactional view)', async () => {
    const client = await post(p.orgA.admin.key, '/api/parties', {
      name: `Viewed ${tag()}`,
      role: 'client',
      address: '9 View St',
      billing_contact: { name: 'Vi', email: 'vi@view.test', title: 'AP', phone: '1' },
    });
    const vendor = await post(p.orgA.admin.key, '/api/parties', {
      name: `Vendor ${tag()}`,
      role: 'vendor',
      tax_id: 'NIT-9',
    });
    const sku = `VIEW-${tag()}`;
    await post(p.orgA.admin.key, '/api/products', {
      sku,
      name: 'Viewed',
      context_type: 'PRODUCT',
      unit_price: 700,
      currency: 'USD',
    });
    const created = await newInvoice({
      client_party_uid: client.uid,
      service_provider_party_uid: vendor.uid,
      line_items: [
        { context_type: 'PRODUCT', sku, quantity: 2 },
        { context_type: 'PRODUCT', sku },
      ],
      invoice_fields: { po: 'PO-9', n: 1.5, flag: true },
      invoice_notes: { invoice_memo: 'memo', invoice_footer: 'footer' },
      assignee_user_uids: [p.orgA.member.userUid],
      due_date: '2026-01-15',
    });
    await post(p.orgA.admin.key, `/api/invoices/${created.uid}/comments`, { text: 'first' });
    const put = await putInvoice(created.uid, { status: 'open' });
    expect(put.status, put.raw).toBe(200);
    const got = await getInvoice(created.uid);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(put.body.data);
    expect(got.body.data.comments).toHaveLength(1);
    expect(got.body.data.line_items.map((l: { quantity: number }) => l.quantity)).toEqual([2, 1]);
  });

  it('400 for a uid that is not a uuid, 404 for an unknown one', async () => {
    expectErrorBody(await getInvoice('not-a-uuid'), 400, 'invalid_parameter');
    expectErrorBody(await getInvoice(MISSING), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/invoices/{uid}',
    {
      method: 'GET',
      url: async () => `/api/invoices/${(await newInvoice()).uid}`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/invoices/${foreignInvoice}`,
    },
    () => ({ t, p }),
  );
});

describe('PUT /api/invoices/{uid}', () => {
  const full = () =>
    newInvoice({
      status: 'open',
      issue_date: daysAgo(20),
      due_date: daysAgo(5),
      client_party_uid: client.uid,
      service_provider_party_uid: vendor.uid,
      target_party_uid: client.uid,
      document_uid: crypto.randomUUID(),
      invoice_blueprint_uid: crypto.randomUUID(),
      invoice_link: 'https://pay.example.test/x',
      line_items: [
        { context_type: 'PRODUCT', sku: 'HOUR', quantity: 2 },
        { context_type: 'DISCOUNT', sku: 'LOYAL' },
      ],
      tax_cents: 3000,
      invoice_notes: { invoice_memo: 'memo', invoice_footer: 'footer' },
      invoice_fields: { po_number: 'PO-1', cost_center: 'CC-9' },
    });

  it('changes only the sent fields, one at a time (interface 4.7)', async () => {
    const newDoc = crypto.randomUUID();
    const newBlueprint = crypto.randomUUID();
    const newIssue = daysAgo(40);
    const newDue = daysAgo(2);
    const paidDate = daysAgo(1);
    // One invoice, one field at a time: each step compares with the state the previous step left.
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ invoice_number: `NEW-${tag()}` }, {}],
      [{ collection_method: 'charge_automatically' }, {}],
      [{ issue_date: newIssue }, { age: 40 }],
      [{ due_date: newDue }, { overdue_days: 2 }],
      [{ paid_date: paidDate }, {}],
      [{ currency: 'usd' }, { currency: 'USD' }],
      [{ target_party_uid: vendor.uid }, {}],
      [{ target_party_uid: null }, {}],
      [{ document_uid: newDoc }, {}],
      [{ invoice_blueprint_uid: newBlueprint }, {}],
      [{ document_uid: null, invoice_blueprint_uid: null }, {}],
      [{ invoice_link: null }, {}],
      [{ due_date: null }, { overdue_days: 0 }],
      [{ due_date: newDue }, { overdue_days: 2 }],
      [{ status: 'uncollectible' }, { overdue_days: 0 }],
    ];
    let before = await full();
    for (const [body, derived] of cases) {
      const res = await putInvoice(before.uid, body);
      expect(res.status, `${JSON.stringify(body)}: ${res.raw}`).toBe(200);
      expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
      expectInvoiceShape(res.body.data);
      expectOnlyChanged(before, res.body.data, { ...body, ...derived });
      expect(res.body.data.revision).toBe(before.revision + 1);
      before = res.body.data;
    }
    expect((await getInvoice(before.uid)).body.data).toEqual(before);
  });

  it('an empty body changes nothing but the bookkeeping', async () => {
    const before = await full();
    const res = await putInvoice(before.uid, {});
    expect(res.status).toBe(200);
    expectOnlyChanged(before, res.body.data, {});
  });

  it('recomputes the derived money when tax or credit notes change', async () => {
    const before = await full();
    // 2 × 15000 − 500 + 3000
    expect(before).toMatchObject({ subtotal_cents: 30000, discount_cents: 500, total_cents: 32500 });
    const taxed = (await putInvoice(before.uid, { tax_cents: 1000 })).body.data;
    expectOnlyChanged(before, taxed, {
      tax_cents: 1000,
      total: 30500,
      total_cents: 30500,
      amount_due_cents: 30500,
      amount_remaining_cents: 30500,
    });
    const credited = (await putInvoice(before.uid, { pre_payment_credit_notes_cents: 2500 })).body.data;
    expect(credited).toMatchObject({
      tax_cents: 1000,
      total_cents: 30500,
      pre_payment_credit_notes_cents: 2500,
      amount_due_cents: 28000,
      amount_paid_cents: 0,
      amount_remaining_cents: 28000,
    });
  });

  it('currency must be exactly 3 letters; it cannot move away from the line items', async () => {
    const inv = await full();
    for (const currency of ['US', 'EURO', '', 'E1R']) {
      const body = expectErrorBody(await putInvoice(inv.uid, { currency }), 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toBe('currency');
    }
    expectErrorBody(await putInvoice(inv.uid, { currency: 'EUR' }), 422, 'validation_failed');
    const empty = await newInvoice();
    expect((await putInvoice(empty.uid, { currency: 'eur' })).body.data.currency).toBe('EUR');
    expect((await getInvoice(inv.uid)).body.data).toEqual(inv);
  });

  it('invoice_fields is an object on the way in: merged, a key sent as null is removed', async () => {
    const before = await full();
    const res = await putInvoice(before.uid, {
      invoice_fields: { cost_center: null, approved: false, amount: 12, due: '2026-02-01T10:00:00Z' },
    });
    expect(res.status).toBe(200);
    expectOnlyChanged(before, res.body.data, {
      invoice_fields: [
        { key: 'amount', value: { type: 'number', original_type: 'integer', value: 12 } },
        { key: 'approved', value: { type: 'boolean', original_type: 'boolean', value: false } },
        { key: 'due', value: { type: 'date', original_type: 'string', value: '2026-02-01T10:00:00Z' } },
        { key: 'po_number', value: { type: 'string', original_type: 'string', value: 'PO-1' } },
      ],
    });
    const replaced = (await putInvoice(before.uid, { invoice_fields: { po_number: 'PO-2' } })).body.data;
    expect(replaced.invoice_fields.find((f: { key: string }) => f.key === 'po_number').value.value).toBe(
      'PO-2',
    );
    expect(replaced.invoice_fields).toHaveLength(4);
    expectErrorBody(
      await putInvoice(before.uid, { invoice_fields: ['po_number'] }),
      422,
      'validation_failed',
    );
    expectErrorBody(await putInvoice(before.uid, { invoice_fields: 'x' }), 422, 'validation_failed');
  });

  it('statuses of the other invoice type are refused (422) and nothing changes', async () => {
    const ar = await full();
    for (const status of ['approved', 'received', 'bogus']) {
      const body = expectErrorBody(
        await putInvoice(ar.uid, { status, invoice_link: 'x' }),
        422,
        'validation_failed',
      );
      expect(body.errors?.[0]?.field).toBe('status');
    }
    const ap = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE' });
    expectErrorBody(await putInvoice(ap.uid, { status: 'open' }), 422, 'validation_failed');
    expectErrorBody(await putInvoice(ap.uid, { status: 'uncollectible' }), 422, 'validation_failed');
    expect((await getInvoice(ar.uid)).body.data).toEqual(ar);
    expect((await getInvoice(ap.uid)).body.data).toEqual(ap);
  });

  it('moving a payable to approved / registered records the caller (integer user id) and now', async () => {
    const ap = await newInvoice({
      invoice_type: 'ACCOUNTS_PAYABLE',
      assignee_user_uids: [p.orgA.member.userUid],
    });
    expect(ap).toMatchObject({
      approved_by: null,
      approval_date: null,
      registered_by: null,
      registration_date: null,
    });
    const inReview = (await putInvoice(ap.uid, { status: 'in_review' })).body.data;
    expect(inReview).toMatchObject({ status: 'in_review', approved_by: null, approval_date: null });

    const t0 = Date.now();
    const approved = (await putInvoice(ap.uid, { status: 'approved' })).body.data;
    expect(approved).toMatchObject({ status: 'approved', approved_by: adminId, registered_by: null });
    expect(Number.isInteger(approved.approved_by)).toBe(true);
    expect(approved.approval_date).toMatch(ISO);
    expect(Date.parse(approved.approval_date)).toBeGreaterThanOrEqual(t0);
    expect(Date.parse(approved.approval_date)).toBeLessThanOrEqual(Date.now());

    const t1 = Date.now();
    const registered = await putInvoice(ap.uid, { status: 'registered' }, p.orgA.member.key);
    expect(registered.status, registered.raw).toBe(200);
    expect(registered.body.data).toMatchObject({
      status: 'registered',
      registered_by: memberId,
      approved_by: adminId,
      approval_date: approved.approval_date,
    });
    expect(memberId).not.toBe(adminId);
    expect(Date.parse(registered.body.data.registration_date)).toBeGreaterThanOrEqual(t1);
    expect(Date.parse(registered.body.data.registration_date)).toBeLessThanOrEqual(Date.now());
  });

  it('409 when the new receivable number is already used; nothing changes', async () => {
    const taken = await newInvoice();
    const mine = await full();
    expectErrorBody(
      await putInvoice(mine.uid, { invoice_number: taken.invoice_number, invoice_link: 'changed' }),
      409,
      'already_exists',
    );
    expect((await getInvoice(mine.uid)).body.data).toEqual(mine);
  });

  it('400 for a bad uuid, 404 for an unknown invoice', async () => {
    expectErrorBody(await putInvoice('not-a-uuid', { invoice_link: 'x' }), 400, 'invalid_parameter');
    expectErrorBody(await putInvoice(MISSING, { invoice_link: 'x' }), 404, 'not_found');
  });

  it("another organization's invoice stays untouched", async () => {
    expectErrorBody(await putInvoice(foreignInvoice, { invoice_link: 'hijacked' }), 404, 'not_found');
    expect((await getInvoice(foreignInvoice, p.orgB.admin.key)).body.data.invoice_link).toBe(
      'https://b.test/1',
    );
  });

  commonRouteChecks(
    'PUT /api/invoices/{uid}',
    {
      method: 'PUT',
      url: async () => `/api/invoices/${(await newInvoice()).uid}`,
      body: () => ({ invoice_link: 'https://checked.test' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}`,
    },
    () => ({ t, p }),
  );
});
