/**
 * The two hot reads of docs/performance.md ("Suggested fixes" 1 and 2), each against what it replaced:
 *
 * - Deep list pages, keys first: every page after the first (the keys-first statement) holds exactly the
 *   rows of the same slice of the whole ordered list (page 1 with per_page 100: the plain select), and of
 *   a plain `limit … offset …` query; for several sorts and filters, payable and receivable, admin and
 *   member. The deep page's statement takes its keys in an inner select that keeps the organization and
 *   the access rule.
 * - GET /api/invoices/{uid}, one named prepared statement: the same answer, byte for byte, as the
 *   multi-statement loader the other paths still use (PUT's answer, the full list item), for an invoice
 *   with every relation; one statement about invoices per GET; the access rule and tenancy (404s).
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { rawQuery } from '../../src/platform/db/client.ts';
import { currentRole, type SessionRole } from '../../src/platform/db/session-role.ts';
import { recordInvoiceIntegration } from '../../src/modules/invoices/invoice-integrations.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { engine } from '../helpers/test-database.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON bodies
type Who = 'admin' | 'member';
type Type = 'ACCOUNTS_PAYABLE' | 'ACCOUNTS_RECEIVABLE';

let t: TestApp;
let p: Principals;
let keyOf: Record<Who, string>;
const DAY = 86_400_000;
const tag = () => crypto.randomBytes(4).toString('hex');
const day = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * DAY).toISOString().slice(0, 10);

async function ok(status: number, method: string, url: string, body?: unknown, key = p.orgA.admin.key) {
  const res = await call(t.app, method, url, { key, body });
  expect(res.status, `${method} ${url}: ${res.raw}`).toBe(status);
  return res.body.data as Json;
}

/** Every statement sent to the database while `fn` runs, with the role it was sent under. */
async function recordStatements<T>(
  fn: () => Promise<T>,
): Promise<{ result: T; statements: { text: string; name?: string; role: SessionRole }[] }> {
  const statements: { text: string; name?: string; role: SessionRole }[] = [];
  const record = (first: unknown) => {
    const text = typeof first === 'string' ? first : (first as { text: string }).text;
    const name = typeof first === 'string' ? undefined : (first as { name?: string }).name;
    // The session-role switch (session-role.ts) is bookkeeping, not a statement of the request.
    if (!text.includes("set_config('role'"))
      statements.push({ text, ...(name ? { name } : {}), role: currentRole() });
  };
  // The driver entry every statement goes through: the pool on PostgreSQL (node-postgres sends pool
  // queries, drizzle's and preparedQuery's alike, through it), the PGlite instance under the
  // role-scoped proxy on PGlite (patched on the instance itself, so the proxy's queue wraps it once).
  const target = (t.database.pool ?? t.database.pglite) as unknown as Record<string, unknown>;
  const original = (Object.getPrototypeOf(target) as Record<string, (...a: unknown[]) => unknown>).query!;
  Object.defineProperty(target, 'query', {
    configurable: true,
    writable: true,
    value: function (this: unknown, ...args: unknown[]) {
      record(args[0]);
      return original.apply(this, args);
    },
  });
  try {
    return { result: await fn(), statements };
  } finally {
    delete target.query;
  }
}

// ---------------------------------------------------------------------------------------------------
// The dataset: orgA's payables and receivables with repeated and missing sort values (ties are broken
// by uid, nulls sort first in descending order), some assigned to the member; orgB's look-alikes.

const PAYABLE_STATUSES = ['received', 'in_review', 'approved', 'registered', 'paid', 'rejected'];
const RECEIVABLE_STATUSES = ['draft', 'open', 'paid', 'void'];
let vendors: { uid: string; name: string }[];
let clientUid: string;
let memberUserUid: string;

async function seed() {
  memberUserUid = p.orgA.member.userUid;
  const party = (body: Json, key = p.orgA.admin.key) => ok(201, 'POST', '/api/parties', body, key);
  vendors = [];
  for (const [name, tax] of [
    ['Acme Supplies', 'NIT-1'],
    ['Acme Supplies', 'NIT-2'], // the same name: ties on vendor_name
    ['Zeta Parts', 'NIT-3'],
  ] as const) {
    const v = await party({ name, role: 'vendor', tax_id: tax });
    vendors.push({ uid: v.uid, name });
  }
  clientUid = (await party({ name: 'Client Co', role: 'client' })).uid;
  await ok(201, 'POST', '/api/products', {
    sku: 'WIDGET',
    name: 'Widget',
    context_type: 'PRODUCT',
    unit_price: 700,
    currency: 'USD',
  });
  for (let i = 0; i < 23; i++) {
    const created = await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `AP-${String(i % 9).padStart(3, '0')}-${i}`,
      status: PAYABLE_STATUSES[i % PAYABLE_STATUSES.length],
      currency: 'USD',
      // 5 distinct issue days (ties), one invoice without a due date in every seven.
      issue_date: day(i % 5),
      due_date: i % 7 === 3 ? null : day(30 + (i % 4)),
      stamp_number: i % 3 === 0 ? null : `ST-${i % 4}`,
      service_provider_party_uid: vendors[i % 3]!.uid,
      line_items: i % 4 === 0 ? [] : [{ context_type: 'PRODUCT', sku: 'WIDGET', quantity: (i % 3) + 1 }],
      assignee_user_uids: i % 3 === 1 ? [memberUserUid] : [],
      responsible_user_uid: i % 5 === 2 ? memberUserUid : null,
    });
    if (i % 4 === 1) await ok(201, 'POST', `/api/invoices/${created.uid}/comments`, { text: `note ${i}` });
  }
  for (let i = 0; i < 13; i++) {
    await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `AR-${String(i % 6).padStart(3, '0')}-${i}`,
      status: RECEIVABLE_STATUSES[i % RECEIVABLE_STATUSES.length],
      currency: 'USD',
      issue_date: day(i % 3),
      due_date: i % 5 === 0 ? null : day(40 + (i % 2)),
      client_party_uid: i % 2 === 0 ? clientUid : null,
      line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET', quantity: (i % 4) + 1 }],
      assignee_user_uids: i % 2 === 1 ? [memberUserUid] : [],
    });
  }
  // orgB: the same shapes, never in orgA's lists.
  const bVendor = await party({ name: 'Acme Supplies', role: 'vendor' }, p.orgB.admin.key);
  for (let i = 0; i < 4; i++) {
    for (const type of ['ACCOUNTS_PAYABLE', 'ACCOUNTS_RECEIVABLE'] as const) {
      await ok(
        201,
        'POST',
        '/api/invoices',
        {
          invoice_type: type,
          invoice_number: `${type === 'ACCOUNTS_PAYABLE' ? 'AP' : 'AR'}-B-${i}`,
          currency: 'USD',
          issue_date: day(i),
          ...(type === 'ACCOUNTS_PAYABLE' ? { service_provider_party_uid: bVendor.uid } : {}),
        },
        p.orgB.admin.key,
      );
    }
  }
}

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '1000000' } });
  p = await createPrincipals(t);
  keyOf = { admin: p.orgA.admin.key, member: p.orgA.member.key };
  await seed();
}, 120_000);
afterAll(async () => t?.close());

const listPath = (type: Type) =>
  `/api/organization/${p.orgA.uid}/${type === 'ACCOUNTS_PAYABLE' ? 'ap' : 'ar'}-invoices`;

async function list(type: Type, query: Record<string, string | number | boolean>, who: Who = 'admin') {
  const res = await call(t.app, 'GET', listPath(type), { key: keyOf[who], query });
  expect(res.status, res.raw).toBe(200);
  return res.body as { items: Json[]; _meta: { total_items: number; total_pages: number } };
}

// ---------------------------------------------------------------------------------------------------

describe('deep list pages (keys first)', () => {
  type Query = Record<string, string | number | boolean>;
  // A function where the query needs a uid made in beforeAll.
  const cases: { type: Type; who: Who; query: Query | (() => Query) }[] = [
    // Every sort the AP list offers that has ties or nulls here, both orders.
    ...(
      [
        {},
        { sort_by: 'issue_date', sort_order: 'asc' },
        { sort_by: 'due_date', sort_order: 'desc' },
        { sort_by: 'due_date', sort_order: 'asc' },
        { sort_by: 'vendor_name', sort_order: 'desc' },
        { sort_by: 'vendor_name', sort_order: 'asc' },
        { sort_by: 'status', sort_order: 'asc' },
        { sort_by: 'stamp_number', sort_order: 'desc' },
        { sort_by: 'amount_due', sort_order: 'desc' },
        { sort_by: 'has_comments', sort_order: 'desc' },
        { sort_by: 'invoice_number', sort_order: 'asc' },
      ] as Query[]
    ).map((query) => ({ type: 'ACCOUNTS_PAYABLE' as const, who: 'admin' as const, query })),
    // Filters: one status (counted from invoice_counts), several, a date range, a text filter (read
    // outside the policy, with its own organization filter), has_comments.
    { type: 'ACCOUNTS_PAYABLE', who: 'admin', query: { status: 'approved,paid,received' } },
    { type: 'ACCOUNTS_PAYABLE', who: 'admin', query: { status: 'in_review', sort_by: 'due_date' } },
    {
      type: 'ACCOUNTS_PAYABLE',
      who: 'admin',
      query: { due_date_from: day(31), due_date_to: day(33), sort_by: 'due_date', sort_order: 'asc' },
    },
    { type: 'ACCOUNTS_PAYABLE', who: 'admin', query: { vendor_name: 'acme', sort_by: 'vendor_name' } },
    { type: 'ACCOUNTS_PAYABLE', who: 'admin', query: { keyword: 'AP-00', sort_by: 'invoice_number' } },
    { type: 'ACCOUNTS_PAYABLE', who: 'admin', query: { has_comments: false, sort_by: 'stamp_number' } },
    // A member: only the invoices assigned to them or that they are responsible for.
    { type: 'ACCOUNTS_PAYABLE', who: 'member', query: {} },
    { type: 'ACCOUNTS_PAYABLE', who: 'member', query: { sort_by: 'due_date', sort_order: 'asc' } },
    { type: 'ACCOUNTS_PAYABLE', who: 'member', query: { sort_by: 'vendor_name', vendor_name: 'acme' } },
    // Receivables.
    { type: 'ACCOUNTS_RECEIVABLE', who: 'admin', query: {} },
    { type: 'ACCOUNTS_RECEIVABLE', who: 'admin', query: { sort_by: 'due_date', sort_order: 'asc' } },
    { type: 'ACCOUNTS_RECEIVABLE', who: 'admin', query: { status: 'open,paid', sort_by: 'status' } },
    { type: 'ACCOUNTS_RECEIVABLE', who: 'admin', query: () => ({ client_uid: clientUid }) },
    { type: 'ACCOUNTS_RECEIVABLE', who: 'member', query: { sort_by: 'invoice_number' } },
  ];

  it('pages 2..N hold exactly the whole ordered list, cut into pages, with the same totals', async () => {
    let deepPagesChecked = 0;
    for (const c of cases) {
      const query = typeof c.query === 'function' ? c.query() : c.query;
      const whole = await list(c.type, { ...query, view: 'list', per_page: 100 }, c.who);
      const expected = whole.items.map((i) => i.uid);
      const label = `${c.type} ${c.who} ${JSON.stringify(query)}`;
      expect(expected.length, label).toBe(whole._meta.total_items);
      expect(expected.length, `${label}: too few rows to have deep pages`).toBeGreaterThan(3);
      for (const perPage of [2, 3]) {
        const pages = Math.ceil(expected.length / perPage);
        const seen: string[] = [];
        // One page past the end too: empty.
        for (let page = 1; page <= pages + 1; page++) {
          const res = await list(c.type, { ...query, view: 'list', per_page: perPage, page }, c.who);
          expect(res._meta.total_items, label).toBe(expected.length);
          expect(res._meta.total_pages, label).toBe(pages);
          const uids = res.items.map((i) => i.uid);
          expect(uids, `${label} per_page=${perPage} page=${page}`).toEqual(
            expected.slice((page - 1) * perPage, page * perPage),
          );
          // The slim items are the same objects as in the whole list, field for field.
          expect(res.items, label).toEqual(whole.items.slice((page - 1) * perPage, page * perPage));
          seen.push(...uids);
          if (page > 1 && uids.length > 0) deepPagesChecked++;
        }
        expect(seen, label).toEqual(expected);
      }
    }
    expect(deepPagesChecked).toBeGreaterThan(150);
  });

  it('a deep page equals a plain `order by … limit … offset …` over the table', async () => {
    const plain = (type: Type, orderBy: string, limit: number, offset: number) =>
      rawQuery<{ uid: string }>(
        t.db,
        `select uid from invoices where organization_uid = $1 and invoice_type = $2
          order by ${orderBy} limit $3 offset $4`,
        [p.orgA.uid, type, limit, offset],
      );
    const sorts: [Record<string, string>, string][] = [
      [{}, 'issue_date desc, uid desc'],
      [{ sort_by: 'due_date', sort_order: 'asc' }, 'due_date asc, uid asc'],
      [{ sort_by: 'vendor_name', sort_order: 'desc' }, 'vendor_name desc, uid desc'],
      [{ sort_by: 'stamp_number', sort_order: 'desc' }, 'stamp_number desc, uid desc'],
    ];
    for (const type of ['ACCOUNTS_PAYABLE', 'ACCOUNTS_RECEIVABLE'] as const) {
      for (const [query, orderBy] of sorts) {
        for (const page of [2, 3, 4]) {
          const res = await list(type, { ...query, view: 'list', per_page: 3, page });
          const rows = await plain(type, orderBy, 3, (page - 1) * 3);
          expect(
            res.items.map((i) => i.uid),
            `${type} ${orderBy} page ${page}`,
          ).toEqual(rows.map((r) => r.uid));
        }
      }
    }
  });

  it('full items (not view=list) of a deep page are the whole list’s full items, comments included', async () => {
    const query = { sort_by: 'due_date', sort_order: 'asc', include_comments: true };
    const whole = await list('ACCOUNTS_PAYABLE', { ...query, per_page: 100 });
    const seen: Json[] = [];
    for (let page = 1; page <= Math.ceil(whole.items.length / 4); page++) {
      seen.push(...(await list('ACCOUNTS_PAYABLE', { ...query, per_page: 4, page })).items);
    }
    expect(seen).toEqual(whole.items);
    expect(seen.some((i) => i.comments.length > 0 && i.line_items.length > 0)).toBe(true);
  });

  it("a deep page takes its keys first, in an inner select with the organization and the member's rule", async () => {
    const listStatements = async (who: Who, page: number) => {
      const { statements } = await recordStatements(() =>
        list('ACCOUNTS_PAYABLE', { view: 'list', per_page: 3, page, sort_by: 'due_date' }, who),
      );
      // The page itself: the statement reading invoices' columns (not the count, not authentication).
      return statements.filter(
        (s) => s.text.includes('"invoice_number"') && s.text.includes('from "invoices"'),
      );
    };
    const [first] = await listStatements('admin', 1);
    expect(first!.text).not.toContain('page_keys');
    expect(first!.text).toMatch(/\blimit\b/i);
    expect(first!.text).not.toMatch(/\boffset\b/i);
    for (const who of ['admin', 'member'] as const) {
      const found = await listStatements(who, 4);
      expect(found).toHaveLength(1);
      const text = found[0]!.text;
      const inner =
        /\(select "uid" from "invoices" where (.*?) order by .*? limit \$\d+ offset \$\d+\) "page_keys"/i.exec(
          text,
        );
      expect(inner, text).not.toBeNull();
      expect(inner![1]).toContain('"invoices"."organization_uid" = $');
      expect(inner![1]).toContain('"invoices"."invoice_type" = $');
      if (who === 'member') expect(inner![1]).toContain('"invoice_assignees"');
      else expect(inner![1]).not.toContain('"invoice_assignees"');
      // The outer select names its organization too, and reads only the page's rows.
      const outer = text.slice(text.indexOf('"page_keys"'));
      expect(outer).toContain('"invoices"."organization_uid" = $');
      expect(outer).not.toMatch(/\boffset\b/i);
    }
  });
});

// ---------------------------------------------------------------------------------------------------

describe('GET /api/invoices/{uid} (one prepared statement)', () => {
  let uid: string;
  let client: Json;
  let vendor: Json;

  beforeAll(async () => {
    client = await ok(201, 'POST', '/api/parties', {
      name: 'Full Client',
      role: 'client',
      address: '1 Client Way',
      tax_id: 'CL-9',
      billing_contact: { name: 'Cara', title: 'Controller', email: 'cara@client.test', phone: '555-0101' },
    });
    vendor = await ok(201, 'POST', '/api/parties', {
      name: 'Full Vendor',
      role: 'vendor',
      address: '9 Vendor Road',
      tax_id: 'NIT-99',
      billing_contact: { name: 'Vic', title: 'Sales', email: 'vic@vendor.test', phone: '555-0909' },
    });
    for (const [sku, context_type, unit_price] of [
      ['HOUR', 'PRODUCT', 15000],
      ['LOYAL', 'DISCOUNT', 500],
    ] as const) {
      await ok(201, 'POST', '/api/products', { sku, name: sku, context_type, unit_price, currency: 'USD' });
    }
    const created = await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `FULL-${tag()}`,
      status: 'in_review',
      currency: 'USD',
      issue_date: '2026-03-01',
      due_date: '2026-03-31T12:30:00.123Z',
      received_date: '2026-03-02',
      stamp_number: 'STAMP-1',
      document_type: 'invoice',
      registration_number: 'REG-7',
      invoice_link: 'https://example.test/full',
      client_party_uid: client.uid,
      service_provider_party_uid: vendor.uid,
      tax_cents: 1234,
      pre_payment_credit_notes_cents: 100,
      invoice_notes: { invoice_memo: 'memo', invoice_footer: 'footer' },
      invoice_fields: { po: 'PO-1', amount: 12.5, flags: { urgent: true }, list: [1, 'two', null] },
      line_items: [
        { context_type: 'PRODUCT', sku: 'WIDGET', quantity: 3 },
        { context_type: 'PRODUCT', sku: 'HOUR', quantity: 2, unit_price: 14000 },
        { context_type: 'DISCOUNT', sku: 'LOYAL' },
      ],
      // Two assignees: their order must not depend on the plan.
      assignee_user_uids: [memberUserUid, p.orgA.admin.userUid],
      responsible_user_uid: memberUserUid,
    });
    uid = created.uid;
    await ok(200, 'POST', `/api/invoices/${uid}/line_items`, { context_type: 'PRODUCT', sku: 'WIDGET' });
    const first = await ok(201, 'POST', `/api/invoices/${uid}/comments`, { text: 'first' });
    await ok(201, 'POST', `/api/invoices/${uid}/comments`, { text: 'by the member' }, p.orgA.member.key);
    await ok(201, 'POST', `/api/invoices/${uid}/comments`, { text: 'third' });
    await ok(200, 'PATCH', `/api/invoices/${uid}/comments/${first.uid}`, { resolved: true });
    // Two integrations written in one transaction: the same created_at, so the uid decides the order.
    await t.db.transaction(async (tx) => {
      for (const [name, metadata] of [
        ['erp', { z: 1, a: { nested: [1, 2] }, text: 'x' }],
        ['bank', { ref: 'B-1', amount: 10.25 }],
      ] as const) {
        await recordInvoiceIntegration(tx, {
          organizationUid: p.orgA.uid,
          entityUid: uid,
          integrationName: name,
          integrationUid: `${name}-1`,
          integrationMetadata: metadata,
        });
      }
    });
  });

  const get = (key = p.orgA.admin.key, id = uid) => call(t.app, 'GET', `/api/invoices/${id}`, { key });

  it('answers the full view with every relation, as built explicitly from what was written', async () => {
    const res = await get();
    expect(res.status, res.raw).toBe(200);
    const inv = res.body.data as Json;
    expect(inv.line_items.map((l: Json) => [l.sku, l.quantity, l.unit_price, l.line_total])).toEqual([
      ['WIDGET', 3, 700, 2100],
      ['HOUR', 2, 14000, 28000],
      ['LOYAL', 1, 500, 500],
      ['WIDGET', 1, 700, 700],
    ]);
    expect(inv.parties).toEqual({
      client: {
        uid: client.uid,
        name: 'Full Client',
        address: '1 Client Way',
        role: 'client',
        billing_contact: client.billing_contact,
      },
      service_provider: {
        uid: vendor.uid,
        name: 'Full Vendor',
        address: '9 Vendor Road',
        role: 'vendor',
        billing_contact: vendor.billing_contact,
      },
    });
    expect(inv.parties.client.billing_contact).toMatchObject({ name: 'Cara', email: 'cara@client.test' });
    expect(inv.assignee_user_uids).toEqual([memberUserUid, p.orgA.admin.userUid].sort());
    expect(inv.comments.map((c: Json) => [c.text, c.actor.email, c.resolved_at !== null])).toEqual([
      ['first', p.orgA.admin.email, true],
      ['by the member', p.orgA.member.email, false],
      ['third', p.orgA.admin.email, false],
    ]);
    expect(inv.integrations).toHaveLength(2);
    expect([...inv.integrations.map((x: Json) => x.uid)]).toEqual(
      inv.integrations.map((x: Json) => x.uid).sort(),
    );
    const erp = inv.integrations.find((x: Json) => x.integration_name === 'erp');
    expect(erp).toMatchObject({ entity_uid: uid, integration_uid: 'erp-1' });
    expect(erp.integration_metadata).toEqual({ z: 1, a: { nested: [1, 2] }, text: 'x' });
    expect(inv.due_date).toBe('2026-03-31T12:30:00.123Z');
    expect(inv.issue_date).toBe('2026-03-01T00:00:00.000Z');
    expect(inv).toMatchObject({
      status: 'in_review',
      subtotal_cents: 30800,
      discount_cents: 500,
      tax_cents: 1234,
      total_cents: 31534,
      pre_payment_credit_notes_cents: 100,
      stamp_number: 'STAMP-1',
      registration_number: 'REG-7',
      invoice_notes: { invoice_memo: 'memo', invoice_footer: 'footer' },
      has_comments: true,
      paid_date: null,
      approved_by: null,
    });
    expect(inv.invoice_fields.map((f: Json) => f.key).sort()).toEqual(['amount', 'flags', 'list', 'po']);
  });

  it('is byte for byte the multi-statement view: PUT’s answer and the full list item', async () => {
    // PUT answers the view through loadInvoiceViews (six statements in its transaction).
    const put = await call(t.app, 'PUT', `/api/invoices/${uid}`, {
      key: p.orgA.admin.key,
      body: { invoice_notes: { invoice_memo: 'memo v2' } },
    });
    expect(put.status, put.raw).toBe(200);
    // The full-view test reads the memo as written, whichever order the tests run in.
    onTestFinished(async () => {
      const back = await call(t.app, 'PUT', `/api/invoices/${uid}`, {
        key: p.orgA.admin.key,
        body: { invoice_notes: { invoice_memo: 'memo' } },
      });
      expect(back.status, back.raw).toBe(200);
    });
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(put.body.data);
    expect(res.raw).toBe(put.raw.replace('"message":"Invoice updated"', '"message":"Invoice"'));
    // The list's full item (include_comments) through the same loader, outside a transaction.
    const listed = await list('ACCOUNTS_PAYABLE', {
      invoice_number: res.body.data.invoice_number,
      include_comments: true,
    });
    expect(listed.items).toHaveLength(1);
    expect(listed.items[0]).toEqual(res.body.data);
    expect(JSON.stringify(listed.items[0])).toBe(JSON.stringify(res.body.data));
    expect(JSON.stringify(res.body)).toBe(res.raw);
    // A member who is assigned reads the same bytes.
    const asMember = await get(p.orgA.member.key);
    expect(asMember.raw).toBe(res.raw);
  });

  it('is byte for byte the multi-statement view for hostile text, odd JSON and an overdue invoice', async () => {
    // Every character JSON escapes, non-ASCII, the two line separators JavaScript leaves alone, and
    // custom fields and metadata whose key order and numbers PostgreSQL's jsonb would print otherwise.
    const odd = `q"u\\o\u0001\u001f\n\t\r\b\f/ü€😀\u2028\u2029<>&'`;
    const party = await ok(201, 'POST', '/api/parties', {
      name: `Odd ${odd}`,
      role: 'vendor',
      address: odd,
      billing_contact: { name: odd, title: '', email: 'odd@vendor.test', phone: odd },
    });
    const created = await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `ODD-${tag()}`,
      status: 'in_review',
      currency: 'USD',
      issue_date: '2020-02-29',
      due_date: '2020-03-31T23:59:59.999Z',
      vendor_name: odd,
      service_provider_party_uid: party.uid,
      invoice_notes: { invoice_memo: odd, invoice_footer: '\u0000'.slice(1) },
      invoice_fields: {
        '10': 1e21,
        b: 0.1,
        '2': odd,
        ü: 'x',
        nested: { '9': 1, a: [1.5e-7, -0, 123456789012345680000] },
        when: '2026-01-01',
      },
      line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET', quantity: 2 }],
    });
    await ok(201, 'POST', `/api/invoices/${created.uid}/comments`, { text: odd });
    await t.db.transaction((tx) =>
      recordInvoiceIntegration(tx, {
        organizationUid: p.orgA.uid,
        entityUid: created.uid,
        integrationName: odd,
        integrationUid: null,
        integrationMetadata: { b: 1, '10': [odd], a: { '1': 2.5, z: null }, big: 1e21 },
      }),
    );
    const put = await call(t.app, 'PUT', `/api/invoices/${created.uid}`, {
      key: p.orgA.admin.key,
      body: { invoice_notes: { invoice_footer: 'after' } },
    });
    expect(put.status, put.raw).toBe(200);
    const res = await call(t.app, 'GET', `/api/invoices/${created.uid}`, { key: p.orgA.admin.key });
    expect(res.status, res.raw).toBe(200);
    expect(res.headers['content-type']).toBe(put.headers['content-type']);
    expect(res.raw).toBe(put.raw.replace('"message":"Invoice updated"', '"message":"Invoice"'));
    expect(res.body.data.overdue_days).toBeGreaterThan(2000);
    expect(res.body.data.parties.service_provider.address).toBe(odd);
    expect(res.body.data.comments[0].text).toBe(odd);
  });

  it('an invoice with no relations at all: empty arrays and null parties, like the list', async () => {
    const bare = await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `BARE-${tag()}`,
      currency: 'EUR',
    });
    const res = await get(p.orgA.admin.key, bare.uid);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      line_items: [],
      integrations: [],
      comments: [],
      assignee_user_uids: [],
      parties: { client: null, service_provider: null },
      issue_date: null,
      due_date: null,
    });
    expect(res.body.data).toEqual(bare);
    const listed = await list('ACCOUNTS_RECEIVABLE', {
      invoice_number: bare.invoice_number,
      include_comments: true,
    });
    expect(JSON.stringify(listed.items[0])).toBe(JSON.stringify(res.body.data));
  });

  it('sends one statement about invoices, named on PostgreSQL, under the caller’s tenant role', async () => {
    await get(); // the connection's first use prepares it; measure the steady state
    // The view that read is held now (invoice-view-cache.ts): forget it, so this read reads.
    t.app.invoiceViewCache!.notify('*');
    const { result, statements } = await recordStatements(() => get());
    expect(result.status).toBe(200);
    const invoiceStatements = statements.filter((s) => /invoice/i.test(s.text));
    expect(invoiceStatements, JSON.stringify(statements.map((s) => s.text))).toHaveLength(1);
    const [read] = invoiceStatements;
    expect(read!.text).toContain('json_agg');
    if (engine === 'postgres') expect(read!.name).toMatch(/^remit_read_invoice_v\d+$/);
    // Row-level security applies: the statement runs as the tenant role of the caller's organizations.
    const role = read!.role;
    expect(role.kind).toBe('tenant');
    const organizations = role.kind === 'tenant' ? role.organizationUids : [];
    expect(organizations).toContain(p.orgA.uid);
    expect(organizations).not.toContain(p.orgB.uid);
  });

  it('a read of a view held since the last one sends no statement, and answers the same bytes', async () => {
    const first = await get();
    const { result, statements } = await recordStatements(() => get());
    expect(statements.filter((s) => /invoice/i.test(s.text))).toEqual([]);
    expect(result.raw).toBe(first.raw);
  });

  it('404 for a member it is not assigned to, for another organization, for an unknown uid', async () => {
    const unassigned = await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `UNASSIGNED-${tag()}`,
      currency: 'USD',
      assignee_user_uids: [p.orgA.admin.userUid],
    });
    expectErrorBody(await get(p.orgA.member.key, unassigned.uid), 404, 'not_found');
    expect((await get(p.orgA.admin.key, unassigned.uid)).status).toBe(200);
    // Responsible without being an assignee is enough.
    const responsible = await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `RESP-${tag()}`,
      currency: 'USD',
      responsible_user_uid: memberUserUid,
    });
    expect((await get(p.orgA.member.key, responsible.uid)).status).toBe(200);
    // Another organization's invoice, whoever asks from orgA; and orgA's from orgB.
    const foreign = await ok(
      201,
      'POST',
      '/api/invoices',
      { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `B-${tag()}`, currency: 'USD' },
      p.orgB.admin.key,
    );
    const notFound = [
      await get(p.orgA.admin.key, foreign.uid),
      await get(p.orgA.member.key, foreign.uid),
      await get(p.orgB.admin.key, uid),
      await get(p.orgB.member.key, uid),
      await get(p.orgA.admin.key, '00000000-0000-4000-8000-000000000000'),
    ];
    const bodies = notFound.map((r) => expectErrorBody(r, 404, 'not_found'));
    // The same answer for "not yours" and "does not exist".
    expect(new Set(bodies.map((b) => b.message)).size).toBe(1);
    expect((await get(p.orgB.admin.key, foreign.uid)).status).toBe(200);
  });
});
