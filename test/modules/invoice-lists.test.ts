/**
 * GET /api/organization/{organization_uid}/ap-invoices and …/ar-invoices (interface §2.1, §2.11, §4.7,
 * §8; CONTRACT §2 and §4): paging and `_links`, the slim and full views, every sort key in both
 * orders, every filter, access by role, tenancy. One file on purpose: every part reads the same
 * dataset, built once in beforeAll through the public API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { nextMillisecond } from '../helpers/until.ts';

type Who = 'admin' | 'member';
type ListItem = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON items checked field by field

/** Interface 2.11, the slim `view=list` item: these fields and no other. */
const SLIM_FIELDS = [
  'uid',
  'status',
  'invoice_number',
  'issue_date',
  'due_date',
  'currency',
  'has_comments',
  'stamp_number',
  'received_date',
  'document_type',
  'vendor_nit',
  'vendor_name',
  'amount_due',
  'registration_number',
  'approved_by',
  'registered_by',
  'approval_date',
  'registration_date',
] as const;

/** Interface 4.7's sort_by values; each is also the name of the slim field it sorts on. */
const SORT_KEYS = [
  'due_date',
  'issue_date',
  'status',
  'invoice_number',
  'document_type',
  'stamp_number',
  'vendor_name',
  'vendor_nit',
  'received_date',
  'amount_due',
  'approved_by',
  'approval_date',
  'registered_by',
  'registration_date',
  'registration_number',
  'has_comments',
] as const;
type SortKey = (typeof SORT_KEYS)[number];
const DATE_KEYS: readonly string[] = [
  'due_date',
  'issue_date',
  'received_date',
  'approval_date',
  'registration_date',
];

const VENDORS = {
  alpha: { name: 'ALPHA SUPPLIES', tax_id: '900100200' },
  bravo: { name: 'BRAVO TRADING', tax_id: '800555111' },
  charlie: { name: 'CHARLIE METALS', tax_id: '700300400' },
  delta: { name: 'DELTA ZQVEN', tax_id: '600111222' },
  echo: { name: 'ECHO SERVICES', tax_id: 'ZQNIT-555' },
};

interface PayableSpec {
  number: string;
  issue?: string;
  due?: string;
  received?: string;
  doc?: string;
  stamp?: string;
  reg?: string;
  vendor?: keyof typeof VENDORS;
  tax: number;
  status: string;
  /** Status changes made afterwards with PUT, each by that user (approval/registration fields). */
  then?: [string, Who][];
  /** Who enters it (default the admin); entered registered, its registration is theirs. */
  createdBy?: Who;
  assignees?: Who[];
  responsible?: Who;
  comment?: boolean;
}

/**
 * Twelve payable invoices of orgA. Values repeat on purpose (ties for every sort key), nulls appear
 * in every nullable column, and each keyword token (ZQ…) sits in exactly one field of one invoice.
 * Values are upper-case ASCII so byte order and any PostgreSQL collation agree.
 */
const PAYABLES: Record<string, PayableSpec> = {
  I1: {
    number: 'INV-0001',
    issue: '2026-01-10',
    due: '2026-02-10',
    received: '2026-01-12T08:00:00Z',
    doc: 'FACTURA',
    stamp: 'ST-100',
    reg: 'REG-0001',
    vendor: 'alpha',
    tax: 5000,
    status: 'received',
    then: [['approved', 'admin']],
  },
  I2: {
    number: 'INV-0002',
    issue: '2026-01-10',
    due: '2026-02-10T15:30:00Z',
    received: '2026-01-12T20:00:00Z',
    doc: 'FACTURA',
    stamp: 'ST-200',
    vendor: 'bravo',
    tax: 5000,
    status: 'received',
    comment: true,
  },
  I3: {
    number: 'INV-0050',
    issue: '2026-01-15',
    due: '2026-02-20',
    doc: 'NOTA-CREDITO',
    reg: 'REG-0003',
    vendor: 'charlie',
    tax: 12000,
    status: 'in_review',
  },
  I4: {
    number: 'INV-50%-X',
    issue: '2026-02-01',
    received: '2026-02-02',
    stamp: 'ST_9',
    reg: 'REG-0004',
    vendor: 'alpha',
    tax: 300,
    status: 'received',
    then: [
      ['approved', 'member'],
      ['registered', 'admin'],
    ],
  },
  I5: {
    number: 'INV-0005',
    due: '2026-03-01',
    received: '2026-02-02',
    doc: 'FACTURA',
    stamp: 'STX9',
    tax: 0,
    status: 'rejected',
  },
  I6: {
    number: 'INV-ZQNUM-6',
    issue: '2026-02-01',
    due: '2026-03-01',
    received: '2026-03-05',
    doc: 'RECIBO',
    stamp: 'ST-600',
    reg: 'REG-0006',
    vendor: 'charlie',
    tax: 7500,
    // Entered registered by an admin: creating it past its approval takes the approval's checks, so a
    // member who is not responsible could not.
    status: 'registered',
    createdBy: 'admin',
  },
  I7: {
    number: 'INV-0007',
    issue: '2026-03-03',
    due: '2026-04-01',
    doc: 'FACTURA-ZQDOC',
    stamp: 'ST-700',
    vendor: 'echo',
    tax: 7500,
    status: 'paid',
    comment: true,
  },
  I8: {
    number: 'INV-0008',
    issue: '2026-03-03',
    due: '2026-04-15',
    received: '2026-03-05',
    doc: 'RECIBO',
    stamp: 'STAMP-ZQSTA-8',
    reg: 'REG-0001',
    vendor: 'bravo',
    tax: 100,
    status: 'received',
    then: [['approved', 'admin']],
  },
  I9: {
    number: 'INV-0009',
    issue: '2026-03-20',
    due: '2026-04-20',
    received: '2026-03-21',
    doc: 'FACTURA',
    stamp: 'ST-100',
    reg: 'REG-0009',
    vendor: 'charlie',
    tax: 2500,
    status: 'received',
    assignees: ['member'],
    comment: true,
  },
  I10: {
    number: 'INV-0010',
    issue: '2026-03-21',
    due: '2026-04-21',
    vendor: 'alpha',
    tax: 2600,
    status: 'in_review',
    responsible: 'member',
  },
  I11: {
    number: 'INV-0011',
    issue: '2026-03-22',
    received: '2026-03-22',
    doc: 'OTRO',
    stamp: 'ST-1100',
    reg: 'REG-ZQREG-11',
    tax: 0,
    status: 'received',
    assignees: ['admin'],
    responsible: 'admin',
  },
  I12: {
    number: 'INV-0009',
    issue: '2026-04-01',
    due: '2026-05-01',
    received: '2026-04-02',
    doc: 'FACTURA',
    stamp: 'ST-1200',
    reg: 'REG-0012',
    vendor: 'delta',
    tax: 9000,
    status: 'in_review',
    assignees: ['admin', 'member'],
  },
};
const LABELS = Object.keys(PAYABLES);
const AR_LABELS = ['A1', 'A2', 'A3'];

interface Dataset {
  uid(label: string): string;
  labelOf(uid: string): string;
  spec(label: string): PayableSpec;
  /** The slim item of a payable invoice as the admin's list showed it after set-up. */
  slim(label: string): ListItem;
  slimAll(): ListItem[];
  userId: Record<Who, number>;
  approvalDate: Record<string, string>;
  registrationDate: Record<string, string>;
  /** Set-up started/ended: every approval and registration time lies between. */
  startedAt: string;
  endedAt: string;
  orgBUids: string[];
}

async function buildDataset(t: TestApp, p: Principals): Promise<Dataset> {
  const org = p.orgA.uid;
  const keyOf: Record<Who, string> = { admin: p.orgA.admin.key, member: p.orgA.member.key };
  const userUid: Record<Who, string> = { admin: p.orgA.admin.userUid, member: p.orgA.member.userUid };
  const ok = async (status: number, method: string, url: string, body: unknown, key = keyOf.admin) => {
    const res = await call(t.app, method, url, { key, body });
    if (res.status !== status) throw new Error(`${method} ${url} → ${res.status}: ${res.raw}`);
    return res.body.data;
  };
  const userId = {
    admin: (await ok(200, 'GET', '/api/me', undefined)).user.id as number,
    member: (await ok(200, 'GET', '/api/me', undefined, keyOf.member)).user.id as number,
  };
  const vendorUid: Record<string, string> = {};
  for (const [k, v] of Object.entries(VENDORS)) {
    vendorUid[k] = (
      await ok(201, 'POST', '/api/parties', {
        organization_uid: org,
        role: 'vendor',
        address: 'Street 1',
        ...v,
      })
    ).uid;
  }
  await ok(201, 'POST', '/api/products', {
    sku: 'WIDGET',
    name: 'Widget',
    context_type: 'PRODUCT',
    unit_price: 1000,
    currency: 'USD',
  });
  const startedAt = new Date().toISOString();
  const uidOf: Record<string, string> = {};
  const approvalDate: Record<string, string> = {};
  const registrationDate: Record<string, string> = {};
  for (const [label, s] of Object.entries(PAYABLES)) {
    if (s.createdBy) await nextMillisecond(); // a registration instant of its own
    const created = await ok(
      201,
      'POST',
      '/api/invoices',
      {
        organization_uid: org,
        invoice_type: 'ACCOUNTS_PAYABLE',
        invoice_number: s.number,
        status: s.status,
        currency: 'USD',
        issue_date: s.issue ?? null,
        due_date: s.due ?? null,
        received_date: s.received ?? null,
        document_type: s.doc ?? null,
        stamp_number: s.stamp ?? null,
        registration_number: s.reg ?? null,
        service_provider_party_uid: s.vendor ? vendorUid[s.vendor] : null,
        tax_cents: s.tax,
        assignee_user_uids: (s.assignees ?? []).map((w) => userUid[w]),
        responsible_user_uid: s.responsible ? userUid[s.responsible] : null,
        ...(label === 'I3'
          ? {
              line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET', quantity: 2 }],
              invoice_notes: { invoice_memo: 'memo I3' },
            }
          : {}),
      },
      keyOf[s.createdBy ?? 'admin'],
    );
    uidOf[label] = created.uid;
    if (s.status === 'registered') registrationDate[label] = created.registration_date;
    for (const [status, who] of s.then ?? []) {
      await nextMillisecond(); // distinct approval/registration instants, so ranges can split them
      // Under the invoice rule a member acts on a payable only while responsible for it: the admin
      // makes the member responsible for the step, then puts it back.
      const responsible = (uid: string | null) =>
        ok(200, 'PUT', `/api/invoices/${created.uid}`, { responsible_user_uid: uid }, keyOf.admin);
      if (who === 'member') await responsible(userUid.member!);
      const updated = await ok(200, 'PUT', `/api/invoices/${created.uid}`, { status }, keyOf[who]);
      if (who === 'member') await responsible(s.responsible ? userUid[s.responsible]! : null);
      if (status === 'approved') approvalDate[label] = updated.approval_date;
      if (status === 'registered') registrationDate[label] = updated.registration_date;
    }
    if (s.comment)
      await ok(201, 'POST', `/api/invoices/${created.uid}/comments`, { text: `comment on ${label}` });
  }
  await nextMillisecond();
  const endedAt = new Date().toISOString();
  // Receivable invoices of orgA (A2 assigned to the member), and orgB's own invoices.
  const receivables: [string, string, Who[]][] = [
    ['A1', 'open', []],
    ['A2', 'draft', ['member']],
    ['A3', 'paid', []],
  ];
  for (const [label, status, assignees] of receivables) {
    const created = await ok(201, 'POST', '/api/invoices', {
      organization_uid: org,
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `AR-000${label.slice(1)}`,
      status,
      currency: 'USD',
      issue_date: '2026-02-01',
      assignee_user_uids: assignees.map((w) => userUid[w]),
    });
    uidOf[label] = created.uid;
  }
  const orgBUids: string[] = [];
  const bVendor = await ok(
    201,
    'POST',
    '/api/parties',
    { organization_uid: p.orgB.uid, role: 'vendor', name: 'ORGB VENDOR', tax_id: '900100200' },
    p.orgB.admin.key,
  );
  for (const [type, number] of [
    ['ACCOUNTS_PAYABLE', 'INV-ZQNUM-ORGB'],
    ['ACCOUNTS_RECEIVABLE', 'AR-ORGB-1'],
  ]) {
    const created = await ok(
      201,
      'POST',
      '/api/invoices',
      {
        organization_uid: p.orgB.uid,
        invoice_type: type,
        invoice_number: number,
        currency: 'USD',
        issue_date: '2026-01-10',
        due_date: '2026-02-10',
        received_date: '2026-01-12',
        stamp_number: 'ST-100',
        document_type: 'FACTURA',
        registration_number: 'REG-0001',
        service_provider_party_uid: bVendor.uid,
      },
      p.orgB.admin.key,
    );
    orgBUids.push(created.uid);
  }
  const listed = await call(t.app, 'GET', `/api/organization/${org}/ap-invoices`, {
    key: keyOf.admin,
    query: { view: 'list', per_page: 100 },
  });
  const slimBy = new Map<string, ListItem>(listed.body.items.map((i: ListItem) => [i.uid, i]));
  const labelBy = new Map(Object.entries(uidOf).map(([l, u]) => [u, l]));
  return {
    uid: (label) => uidOf[label]!,
    labelOf: (uid) => labelBy.get(uid) ?? `foreign:${uid}`,
    spec: (label) => PAYABLES[label]!,
    slim: (label) => {
      const found = slimBy.get(uidOf[label]!);
      if (!found) throw new Error(`${label} missing from the admin's list`);
      return found;
    },
    slimAll: () => [...slimBy.values()],
    userId,
    approvalDate,
    registrationDate,
    startedAt,
    endedAt,
    orgBUids,
  };
}

function compareKeys(key: SortKey, a: unknown, b: unknown): number {
  if (DATE_KEYS.includes(key)) return Date.parse(a as string) - Date.parse(b as string);
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * The order PostgreSQL gives `ORDER BY key <dir>, uid <dir>`: NULLS LAST for asc, NULLS FIRST for
 * desc — so desc is exactly asc reversed. A uuid orders like its lower-case text.
 */
function referenceOrder(items: ListItem[], key: SortKey, order: 'asc' | 'desc'): string[] {
  const asc = [...items].sort((x, y) => {
    const a = x[key];
    const b = y[key];
    const byUid = x.uid < y.uid ? -1 : x.uid > y.uid ? 1 : 0;
    if (a === null && b === null) return byUid;
    if (a === null) return 1;
    if (b === null) return -1;
    return compareKeys(key, a, b) || byUid;
  });
  const uidsInOrder = asc.map((i) => i.uid as string);
  return order === 'asc' ? uidsInOrder : uidsInOrder.reverse();
}

let t: TestApp;
let p: Principals;
let d: Dataset;

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
  d = await buildDataset(t, p);
});
afterAll(async () => t?.close());

type Query = Record<string, string | number | boolean>;
const apUrl = (org: string) => `/api/organization/${org}/ap-invoices`;
const arUrl = (org: string) => `/api/organization/${org}/ar-invoices`;
const ap = (query: Query = {}, key = p.orgA.admin.key) =>
  call(t.app, 'GET', apUrl(p.orgA.uid), { key, query });
const ar = (query: Query = {}, key = p.orgA.admin.key) =>
  call(t.app, 'GET', arUrl(p.orgA.uid), { key, query });
const uids = (items: { uid: string }[]) => items.map((i) => i.uid);
const labelsOf = (items: { uid: string }[]) => items.map((i) => d.labelOf(i.uid));

describe('paging, _meta and _links', () => {
  it('answers items, _meta and _links at the top level (no data envelope), default page 1 of 25', async () => {
    const res = await ap();
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      '_links',
      '_meta',
      'items',
      'message',
      'status',
      'status_code',
    ]);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: expect.any(String) });
    expect(res.body._meta).toStrictEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 12 });
    expect(res.body.items).toHaveLength(12);
    expect(Object.keys(res.body._links).sort()).toEqual(['next', 'prev', 'self']);
    expect(res.body._links.next).toBeNull();
    expect(res.body._links.prev).toBeNull();
    const self = new URL(res.body._links.self);
    expect(self.pathname).toBe(apUrl(p.orgA.uid));
    expect(self.searchParams.get('page')).toBe('1');
    expect(self.searchParams.get('per_page')).toBe('25');
  });

  it('_meta is exact for every page size, and pages split the list with nothing lost or repeated', async () => {
    for (const perPage of [1, 5, 7, 12, 13, 100]) {
      const totalPages = Math.ceil(12 / perPage);
      const seen: string[] = [];
      for (let page = 1; page <= totalPages; page++) {
        const res = await ap({ page, per_page: perPage, view: 'list' });
        expect(res.status).toBe(200);
        expect(res.body._meta).toStrictEqual({
          page,
          per_page: perPage,
          total_pages: totalPages,
          total_items: 12,
        });
        expect(res.body.items).toHaveLength(Math.min(perPage, 12 - (page - 1) * perPage));
        seen.push(...uids(res.body.items));
      }
      expect(seen).toEqual(uids((await ap({ per_page: 100, view: 'list' })).body.items));
    }
  });

  it('next is null on the last page, prev null on the first; both carry page±1 and keep the query', async () => {
    const query = {
      per_page: 5,
      view: 'list',
      sort_by: 'due_date',
      sort_order: 'asc',
      status: 'received,in_review,approved,registered,paid,rejected',
      keyword: 'inv',
    };
    const check = (link: string | null, page: number | null) => {
      if (page === null) return expect(link).toBeNull();
      const url = new URL(link!);
      expect(url.pathname).toBe(apUrl(p.orgA.uid));
      const params = Object.fromEntries(url.searchParams);
      expect(params).toStrictEqual({
        ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])),
        page: String(page),
      });
    };
    const first = await ap({ ...query, page: 1 });
    expect(first.body._meta).toStrictEqual({ page: 1, per_page: 5, total_pages: 3, total_items: 12 });
    check(first.body._links.self, 1);
    check(first.body._links.next, 2);
    check(first.body._links.prev, null);
    const middle = await ap({ ...query, page: 2 });
    check(middle.body._links.self, 2);
    check(middle.body._links.next, 3);
    check(middle.body._links.prev, 1);
    const last = await ap({ ...query, page: 3 });
    expect(last.body.items).toHaveLength(2);
    check(last.body._links.self, 3);
    check(last.body._links.next, null);
    check(last.body._links.prev, 2);
  });

  it('following next from page 1 and then prev back visits every invoice once, in order', async () => {
    const expected = uids((await ap({ per_page: 100, view: 'list', sort_by: 'vendor_name' })).body.items);
    const follow = async (link: string) => {
      const url = new URL(link);
      return call(t.app, 'GET', url.pathname + url.search, { key: p.orgA.admin.key });
    };
    let res = await ap({ per_page: 5, view: 'list', sort_by: 'vendor_name' });
    const forward = [...uids(res.body.items)];
    while (res.body._links.next) {
      res = await follow(res.body._links.next);
      expect(res.status).toBe(200);
      forward.push(...uids(res.body.items));
    }
    expect(forward).toEqual(expected);
    expect(res.body._meta.page).toBe(3);
    const backward: string[][] = [uids(res.body.items)];
    while (res.body._links.prev) {
      res = await follow(res.body._links.prev);
      backward.unshift(uids(res.body.items));
    }
    expect(res.body._meta.page).toBe(1);
    expect(backward.flat()).toEqual(expected);
  });

  it('a page past the end is empty with next null; an empty result has 0 pages and no links', async () => {
    const past = await ap({ page: 4, per_page: 5 });
    expect(past.status).toBe(200);
    expect(past.body.items).toEqual([]);
    expect(past.body._meta).toStrictEqual({ page: 4, per_page: 5, total_pages: 3, total_items: 12 });
    expect(past.body._links.next).toBeNull();
    if (past.body._links.prev !== null) {
      expect(Number(new URL(past.body._links.prev).searchParams.get('page'))).toBeLessThanOrEqual(3);
    }
    const none = await ap({ keyword: 'no-invoice-has-this' });
    expect(none.body.items).toEqual([]);
    expect(none.body._meta).toStrictEqual({ page: 1, per_page: 25, total_pages: 0, total_items: 0 });
    expect(none.body._links.next).toBeNull();
    expect(none.body._links.prev).toBeNull();
  });

  it('400 in the error body for per_page 0, 101, -1, x, 2.5 and page 0, -1, x', async () => {
    for (const per_page of ['0', '101', '-1', 'x', '2.5']) {
      const body = expectErrorBody(await ap({ per_page }), 400);
      expect(JSON.stringify(body)).toContain('per_page');
    }
    for (const page of ['0', '-1', 'x', '1.5']) {
      const body = expectErrorBody(await ap({ page }), 400);
      expect(JSON.stringify(body)).toContain('page');
    }
    for (const per_page of [1, 100]) expect((await ap({ per_page })).status).toBe(200);
    expectErrorBody(await ar({ per_page: 101 }), 400);
  });
});

describe('views', () => {
  it('view=list gives exactly the slim fields of interface 2.11, and nothing else', async () => {
    const res = await ap({ view: 'list', per_page: 100 });
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(12);
    for (const item of res.body.items) expect(Object.keys(item).sort()).toEqual([...SLIM_FIELDS].sort());
    // include_comments is ignored with view=list.
    const withComments = await ap({ view: 'list', per_page: 100, include_comments: true });
    for (const item of withComments.body.items) {
      expect(Object.keys(item).sort()).toEqual([...SLIM_FIELDS].sort());
    }
  });

  it('slim values are the invoice’s own: vendor from the service provider party, amount_due in cents', async () => {
    const i1 = d.slim('I1');
    expect(i1).toStrictEqual({
      uid: d.uid('I1'),
      status: 'approved',
      invoice_number: 'INV-0001',
      issue_date: '2026-01-10T00:00:00.000Z',
      due_date: '2026-02-10T00:00:00.000Z',
      currency: 'USD',
      has_comments: false,
      stamp_number: 'ST-100',
      received_date: '2026-01-12T08:00:00.000Z',
      document_type: 'FACTURA',
      vendor_nit: '900100200',
      vendor_name: 'ALPHA SUPPLIES',
      amount_due: 5000,
      registration_number: 'REG-0001',
      approved_by: d.userId.admin,
      registered_by: null,
      approval_date: d.approvalDate.I1,
      registration_date: null,
    });
    expect(d.slim('I3').amount_due).toBe(14_000); // 2 × 1000 product + 12000 tax
    expect(d.slim('I2').has_comments).toBe(true);
    expect(d.slim('I4')).toMatchObject({
      approved_by: d.userId.member,
      registered_by: d.userId.admin,
      approval_date: d.approvalDate.I4,
      registration_date: d.registrationDate.I4,
    });
    expect(d.slim('I5')).toMatchObject({ vendor_name: '', vendor_nit: '', issue_date: null });
  });

  it('without view: the full invoice (line_items, parties, integrations, invoice_notes), no comments', async () => {
    const res = await ap({ per_page: 100 });
    expect(res.body.items).toHaveLength(12);
    for (const item of res.body.items) {
      expect(item).toMatchObject({
        invoice_type: 'ACCOUNTS_PAYABLE',
        line_items: expect.any(Array),
        parties: { client: null },
        integrations: expect.any(Array),
        invoice_notes: { invoice_memo: expect.any(String), invoice_footer: expect.any(String) },
        invoice_fields: expect.any(Array),
      });
      expect(item).not.toHaveProperty('comments');
      // The full item carries every slim field with the same value (amount_due is amount_due_cents).
      const slim = d.slim(d.labelOf(item.uid));
      for (const field of SLIM_FIELDS) {
        expect(field === 'amount_due' ? item.amount_due_cents : item[field]).toStrictEqual(slim[field]);
      }
    }
    const i3 = res.body.items.find((i: ListItem) => i.uid === d.uid('I3'));
    expect(i3.line_items).toHaveLength(1);
    expect(i3.line_items[0]).toMatchObject({ sku: 'WIDGET', quantity: 2, line_total: 2000 });
    expect(i3.parties.service_provider).toMatchObject({ name: 'CHARLIE METALS', role: 'vendor' });
    expect(i3.invoice_notes).toStrictEqual({ invoice_memo: 'memo I3', invoice_footer: '' });
    expect((await ap({ include_comments: false })).body.items[0]).not.toHaveProperty('comments');
  });

  it('include_comments=true adds comments to the full view', async () => {
    const res = await ap({ per_page: 100, include_comments: true });
    for (const item of res.body.items) {
      const label = d.labelOf(item.uid);
      expect(item.comments).toHaveLength(d.spec(label).comment ? 1 : 0);
    }
    const i2 = res.body.items.find((i: ListItem) => i.uid === d.uid('I2'));
    expect(i2.comments[0]).toMatchObject({
      text: 'comment on I2',
      resolved_by: null,
      actor: { id: d.userId.admin, email: p.orgA.admin.email },
    });
  });

  it('400 for any view other than list, and for a non-boolean include_comments', async () => {
    for (const view of ['other', 'full', 'LIST']) expectErrorBody(await ap({ view }), 400);
    expectErrorBody(await ap({ include_comments: 'maybe' }), 400);
    expectErrorBody(await ar({ view: 'slim' }), 400);
  });
});

describe('sorting', () => {
  it('the dataset has ties, distinct values and (where nullable) nulls for every sort key', () => {
    for (const key of SORT_KEYS) {
      const values = d.slimAll().map((i) => JSON.stringify(i[key]));
      expect(new Set(values).size, key).toBeGreaterThanOrEqual(2);
      if (!['approval_date', 'registration_date'].includes(key)) {
        expect(new Set(values).size, `${key} has a tie`).toBeLessThan(values.length);
      }
    }
  });

  for (const key of SORT_KEYS) {
    for (const order of ['asc', 'desc'] as const) {
      it(`sort_by=${key}&sort_order=${order}: key then uid in that direction, PostgreSQL NULL placement; pages are stable`, async () => {
        const expected = referenceOrder(d.slimAll(), key, order);
        const all = await ap({ sort_by: key, sort_order: order, per_page: 100, view: 'list' });
        expect(all.status).toBe(200);
        expect(labelsOf(all.body.items)).toEqual(expected.map((u) => d.labelOf(u)));
        const paged: string[] = [];
        for (let page = 1; page <= 3; page++) {
          const res = await ap({ sort_by: key, sort_order: order, per_page: 5, page, view: 'list' });
          expect(res.body._meta).toStrictEqual({ page, per_page: 5, total_pages: 3, total_items: 12 });
          paged.push(...uids(res.body.items));
        }
        expect(paged).toEqual(expected);
        expect(new Set(paged).size).toBe(12);
      });
    }
  }

  it('defaults: issue_date desc; sort_order alone keeps issue_date; sort_by alone is desc', async () => {
    const byIssueDesc = referenceOrder(d.slimAll(), 'issue_date', 'desc');
    expect(uids((await ap({ per_page: 100, view: 'list' })).body.items)).toEqual(byIssueDesc);
    expect(uids((await ap({ per_page: 100 })).body.items)).toEqual(byIssueDesc);
    expect(uids((await ap({ per_page: 100, sort_order: 'asc' })).body.items)).toEqual(
      referenceOrder(d.slimAll(), 'issue_date', 'asc'),
    );
    expect(uids((await ap({ per_page: 100, sort_by: 'amount_due' })).body.items)).toEqual(
      referenceOrder(d.slimAll(), 'amount_due', 'desc'),
    );
  });

  it('400 for an unknown sort_by or sort_order', async () => {
    for (const sort_by of [
      'uid',
      'vendor',
      'amount_due_cents',
      'ISSUE_DATE',
      'issue_date;drop table invoices',
    ]) {
      expectErrorBody(await ap({ sort_by }), 400);
    }
    for (const sort_order of ['up', 'ASC', 'descending']) expectErrorBody(await ap({ sort_order }), 400);
    expectErrorBody(await ar({ sort_by: 'nope' }), 400);
  });
});

describe('filters', () => {
  /** The admin's AP list for this query must be exactly these invoices, and total_items must count them. */
  const expectLabels = async (query: Query, expected: string[], key = p.orgA.admin.key) => {
    const res = await ap({ per_page: 100, view: 'list', ...query }, key);
    expect(res.status, res.raw).toBe(200);
    expect(labelsOf(res.body.items).sort(), JSON.stringify(query)).toEqual([...expected].sort());
    expect(res.body._meta.total_items, JSON.stringify(query)).toBe(expected.length);
  };
  const all = () => [...LABELS];
  const except = (...labels: string[]) => LABELS.filter((l) => !labels.includes(l));

  it('status: one, or several comma-separated', async () => {
    await expectLabels({ status: 'approved' }, ['I1', 'I8']);
    await expectLabels({ status: 'received' }, ['I2', 'I9', 'I11']);
    await expectLabels({ status: 'in_review' }, ['I3', 'I10', 'I12']);
    await expectLabels({ status: 'paid' }, ['I7']);
    await expectLabels({ status: 'rejected' }, ['I5']);
    await expectLabels({ status: 'approved,registered' }, ['I1', 'I4', 'I6', 'I8']);
    await expectLabels({ status: 'paid,rejected,registered' }, ['I4', 'I5', 'I6', 'I7']);
    await expectLabels({ status: 'received,in_review,approved,registered,paid,rejected' }, all());
    // The full view filters the same way.
    expect(labelsOf((await ap({ status: 'approved' })).body.items).sort()).toEqual(['I1', 'I8']);
  });

  it('status: 400 for an unknown status, or one of the other invoice kind', async () => {
    for (const status of ['bogus', 'approved,bogus', 'open', 'draft,approved']) {
      const body = expectErrorBody(await ap({ status }), 400);
      expect(body.errors?.[0]?.field).toBe('status');
    }
    expectErrorBody(await ar({ status: 'approved' }), 400);
  });

  it('due_date: that UTC day; _from and _to inclusive; a bare date as _to includes the whole day', async () => {
    await expectLabels({ due_date: '2026-02-10' }, ['I1', 'I2']);
    await expectLabels({ due_date: '2026-02-10T23:59:59Z' }, ['I1', 'I2']);
    await expectLabels({ due_date: '2026-02-11T01:00:00+05:00' }, ['I1', 'I2']); // 2026-02-10T20:00Z
    await expectLabels({ due_date: '2026-03-01' }, ['I5', 'I6']);
    await expectLabels({ due_date: '2026-02-11' }, []);
    await expectLabels({ due_date_from: '2026-04-15' }, ['I8', 'I9', 'I10', 'I12']);
    await expectLabels({ due_date_from: '2026-04-15T00:00:01Z' }, ['I9', 'I10', 'I12']);
    await expectLabels({ due_date_to: '2026-02-10' }, ['I1', 'I2']);
    await expectLabels({ due_date_to: '2026-02-10T00:00:00Z' }, ['I1']);
    await expectLabels({ due_date_to: '2026-02-09' }, []);
    await expectLabels({ due_date_from: '2026-02-10T15:30:00Z', due_date_to: '2026-02-20' }, ['I2', 'I3']);
    await expectLabels({ due_date_from: '2026-02-11', due_date_to: '2026-03-01' }, ['I3', 'I5', 'I6']);
    await expectLabels({ due_date_from: '2026-01-01', due_date_to: '2026-12-31' }, except('I4', 'I11'));
  });

  it('issue_date: that UTC day, inclusive range, bare _to = whole day', async () => {
    await expectLabels({ issue_date: '2026-02-01' }, ['I4', 'I6']);
    await expectLabels({ issue_date: '2026-01-10T12:00:00Z' }, ['I1', 'I2']);
    await expectLabels({ issue_date_to: '2026-01-10' }, ['I1', 'I2']);
    await expectLabels({ issue_date_from: '2026-03-22' }, ['I11', 'I12']);
    await expectLabels({ issue_date_from: '2026-03-21T00:00:01Z' }, ['I11', 'I12']);
    await expectLabels({ issue_date_from: '2026-03-03', issue_date_to: '2026-03-21' }, [
      'I7',
      'I8',
      'I9',
      'I10',
    ]);
    await expectLabels({ issue_date_from: '2000-01-01' }, except('I5'));
  });

  it('received_date: that UTC day, inclusive range, bare _to = whole day', async () => {
    await expectLabels({ received_date: '2026-01-12' }, ['I1', 'I2']);
    await expectLabels({ received_date: '2026-02-02' }, ['I4', 'I5']);
    await expectLabels({ received_date_to: '2026-01-12T12:00:00Z' }, ['I1']);
    await expectLabels({ received_date_to: '2026-01-12' }, ['I1', 'I2']);
    await expectLabels({ received_date_from: '2026-01-12T20:00:00Z', received_date_to: '2026-02-02' }, [
      'I2',
      'I4',
      'I5',
    ]);
    await expectLabels({ received_date_from: '2026-03-22' }, ['I11', 'I12']);
    await expectLabels({ received_date_from: '2000-01-01' }, except('I3', 'I7', 'I10'));
  });

  it('approval_date_from/_to: the time PUT status=approved recorded, inclusive', async () => {
    const a = d.approvalDate;
    expect(Object.keys(a).sort()).toEqual(['I1', 'I4', 'I8']);
    expect(a.I1! < a.I4! && a.I4! < a.I8!).toBe(true);
    await expectLabels({ approval_date_from: d.startedAt, approval_date_to: d.endedAt }, ['I1', 'I4', 'I8']);
    await expectLabels({ approval_date_from: a.I4! }, ['I4', 'I8']);
    await expectLabels({ approval_date_to: a.I4! }, ['I1', 'I4']);
    await expectLabels({ approval_date_from: a.I4!, approval_date_to: a.I4! }, ['I4']);
    await expectLabels({ approval_date_from: d.endedAt }, []);
    await expectLabels({ approval_date_to: d.startedAt }, []);
    // A bare date as _to covers that whole day, a bare date as _from starts at its midnight.
    const day = a.I1!.slice(0, 10);
    const onOrBefore = ['I1', 'I4', 'I8'].filter((l) => a[l]!.slice(0, 10) <= day);
    await expectLabels({ approval_date_to: day }, onOrBefore);
    await expectLabels({ approval_date_from: day }, ['I1', 'I4', 'I8']);
    const tomorrow = new Date(Date.parse(`${a.I8!.slice(0, 10)}T00:00:00Z`) + 86_400_000).toISOString();
    await expectLabels({ approval_date_from: tomorrow.slice(0, 10) }, []);
  });

  it('registration_date_from/_to: the time PUT status=registered recorded, inclusive', async () => {
    const r = d.registrationDate;
    expect(Object.keys(r).sort()).toEqual(['I4', 'I6']);
    await expectLabels({ registration_date_from: d.startedAt, registration_date_to: d.endedAt }, [
      'I4',
      'I6',
    ]);
    await expectLabels({ registration_date_from: r.I6! }, ['I6']);
    await expectLabels({ registration_date_to: r.I4! }, ['I4']);
    await expectLabels({ registration_date_from: r.I4!, registration_date_to: r.I6! }, ['I4', 'I6']);
    await expectLabels(
      { registration_date_to: r.I4!.slice(0, 10) },
      ['I4', 'I6'].filter((l) => r[l]!.slice(0, 10) <= r.I4!.slice(0, 10)),
    );
    await expectLabels({ registration_date_from: d.endedAt }, []);
  });

  it('400 for a bad date in any date parameter', async () => {
    const params = [
      'due_date',
      'due_date_from',
      'due_date_to',
      'issue_date',
      'issue_date_from',
      'issue_date_to',
      'received_date',
      'received_date_from',
      'received_date_to',
      'approval_date_from',
      'approval_date_to',
      'registration_date_from',
      'registration_date_to',
    ];
    const bad = ['not-a-date', '2026-13-01', '2026-02-30', '2026-02-10T25:00:00Z', '10', 'x'.repeat(41)];
    for (const name of params) {
      for (const value of bad) {
        const res = await ap({ [name]: value });
        expect(res.status, `${name}=${value}: ${res.raw}`).toBe(400);
        expectErrorBody(res, 400);
      }
      expect((await ap({ [name]: '2026-02-10' })).status).toBe(200);
      expect((await ap({ [name]: '2026-02-10T10:00:00+05:00' })).status).toBe(200);
    }
    expectErrorBody(await ar({ due_date: 'tomorrow' }), 400);
  });

  it('document_type, invoice_number, stamp_number, vendor_nit, vendor_name: case-insensitive substring', async () => {
    await expectLabels({ document_type: 'factura' }, ['I1', 'I2', 'I5', 'I7', 'I9', 'I12']);
    await expectLabels({ document_type: 'ReCiBo' }, ['I6', 'I8']);
    await expectLabels({ document_type: 'a-cr' }, ['I3']);
    await expectLabels({ document_type: 'a_' }, []); // `_` is literal
    await expectLabels({ invoice_number: 'inv-00' }, except('I4', 'I6'));
    await expectLabels({ invoice_number: '0009' }, ['I9', 'I12']);
    await expectLabels({ invoice_number: '0050' }, ['I3']);
    await expectLabels({ invoice_number: '50%' }, ['I4']); // `%` is literal
    await expectLabels({ invoice_number: 'zqnum' }, ['I6']);
    await expectLabels({ stamp_number: 'st_9' }, ['I4']); // not STX9
    await expectLabels({ stamp_number: 'st-1' }, ['I1', 'I9', 'I11', 'I12']);
    await expectLabels({ stamp_number: 'zqsta' }, ['I8']);
    await expectLabels({ vendor_nit: '0100' }, ['I1', 'I4', 'I10']);
    await expectLabels({ vendor_nit: 'zqnit' }, ['I7']);
    await expectLabels({ vendor_nit: '%' }, []);
    await expectLabels({ vendor_name: 'alpha' }, ['I1', 'I4', 'I10']);
    await expectLabels({ vendor_name: 'Supplies' }, ['I1', 'I4', 'I10']);
    await expectLabels({ vendor_name: 'trad' }, ['I2', 'I8']);
    await expectLabels({ vendor_name: 'zqven' }, ['I12']);
    await expectLabels({ vendor_name: 'orgb' }, []);
    for (const name of ['document_type', 'invoice_number', 'stamp_number', 'vendor_nit', 'vendor_name']) {
      expectErrorBody(await ap({ [name]: 'a'.repeat(201) }), 400);
    }
  });

  it('keyword: invoice number, vendor name, vendor NIT, stamp number, registration number; case-insensitive; % and _ literal', async () => {
    await expectLabels({ keyword: 'zqnum' }, ['I6']); // invoice number
    await expectLabels({ keyword: 'ZqVeN' }, ['I12']); // vendor name
    await expectLabels({ keyword: 'zqnit' }, ['I7']); // vendor NIT
    await expectLabels({ keyword: 'zqsta' }, ['I8']); // stamp number
    await expectLabels({ keyword: 'zqreg' }, ['I11']); // registration number
    await expectLabels({ keyword: 'zqdoc' }, []); // document type is not one of the five
    await expectLabels({ keyword: 'reg-0001' }, ['I1', 'I8']);
    await expectLabels({ keyword: '0100' }, ['I1', 'I4', 'I10']);
    await expectLabels({ keyword: '50%' }, ['I4']); // not INV-0050
    await expectLabels({ keyword: '%' }, ['I4']);
    await expectLabels({ keyword: 'st_9' }, ['I4']); // not STX9
    await expectLabels({ keyword: '_' }, ['I4']);
    await expectLabels({ keyword: 'i' }, all());
  });

  it('keyword: up to 200 characters; over 200 → 400', async () => {
    await expectLabels({ keyword: 'z'.repeat(200) }, []);
    const body = expectErrorBody(await ap({ keyword: 'z'.repeat(201) }), 400);
    expect(JSON.stringify(body)).toContain('keyword');
    expectErrorBody(await ar({ keyword: 'z'.repeat(201) }), 400);
  });

  it('has_comments: true or false (set by POST /api/invoices/{uid}/comments)', async () => {
    await expectLabels({ has_comments: true }, ['I2', 'I7', 'I9']);
    await expectLabels({ has_comments: false }, except('I2', 'I7', 'I9'));
    expectErrorBody(await ap({ has_comments: 'maybe' }), 400);
  });

  it('approved_by, registered_by, responsible: integer user ids, comma-separated', async () => {
    const { admin, member } = d.userId;
    await expectLabels({ approved_by: String(admin) }, ['I1', 'I8']);
    await expectLabels({ approved_by: String(member) }, ['I4']);
    await expectLabels({ approved_by: `${admin},${member}` }, ['I1', 'I4', 'I8']);
    await expectLabels({ registered_by: String(admin) }, ['I4', 'I6']);
    await expectLabels({ registered_by: String(member) }, []);
    await expectLabels({ registered_by: `${member},${admin}` }, ['I4', 'I6']);
    await expectLabels({ responsible: String(member) }, ['I10']);
    await expectLabels({ responsible: String(admin) }, ['I11']);
    await expectLabels({ responsible: `${admin},${member}` }, ['I10', 'I11']);
    await expectLabels({ approved_by: '2147483647' }, []);
    await expectLabels({ approved_by: '9999999999' }, []);
    for (const name of ['approved_by', 'registered_by', 'responsible']) {
      for (const value of ['abc', '1.5', '-1', `${admin};${member}`]) {
        expectErrorBody(await ap({ [name]: value }), 400);
      }
    }
  });

  it('filters combine with AND', async () => {
    await expectLabels({ status: 'in_review', vendor_name: 'alpha' }, ['I10']);
    await expectLabels({ due_date_from: '2026-03-01', has_comments: true }, ['I7', 'I9']);
    await expectLabels({ keyword: 'inv-00', approved_by: String(d.userId.admin) }, ['I1', 'I8']);
    await expectLabels({ document_type: 'factura', received_date: '2026-01-12', stamp_number: '200' }, [
      'I2',
    ]);
    await expectLabels({ status: 'approved', has_comments: true }, []);
  });
});

describe('access', () => {
  it('an admin sees every payable invoice of the organization', async () => {
    const res = await ap({ per_page: 100, view: 'list' });
    expect(labelsOf(res.body.items).sort()).toEqual([...LABELS].sort());
    expect(res.body._meta.total_items).toBe(12);
  });

  it('a member sees only invoices listing them as assignee or naming them responsible, and counts only those', async () => {
    const key = p.orgA.member.key;
    const res = await ap({ per_page: 100, view: 'list' }, key);
    expect(res.status).toBe(200);
    // I4 was approved by the member: that alone does not make it visible.
    expect(labelsOf(res.body.items).sort()).toEqual(['I10', 'I12', 'I9']);
    expect(res.body._meta).toStrictEqual({ page: 1, per_page: 100, total_pages: 1, total_items: 3 });
    const paged = await ap({ per_page: 2, page: 2, view: 'list' }, key);
    expect(paged.body._meta).toStrictEqual({ page: 2, per_page: 2, total_pages: 2, total_items: 3 });
    expect(paged.body.items).toHaveLength(1);
    expect(paged.body._links.next).toBeNull();
    // Filters narrow what the member may see; they never widen it.
    expect(labelsOf((await ap({ keyword: 'zqnum' }, key)).body.items)).toEqual([]);
    expect(labelsOf((await ap({ keyword: 'zqven' }, key)).body.items)).toEqual(['I12']);
    expect(labelsOf((await ap({ approved_by: String(d.userId.member) }, key)).body.items)).toEqual([]);
    const full = await ap({ per_page: 100 }, key);
    expect(full.body._meta.total_items).toBe(3);
  });

  it('the AP list returns only payable invoices, the AR list only receivable ones (with the same machinery)', async () => {
    const apItems = (await ap({ per_page: 100 })).body.items;
    expect(apItems.every((i: ListItem) => i.invoice_type === 'ACCOUNTS_PAYABLE')).toBe(true);
    const res = await ar({ per_page: 100 });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      '_links',
      '_meta',
      'items',
      'message',
      'status',
      'status_code',
    ]);
    expect(res.body.items.every((i: ListItem) => i.invoice_type === 'ACCOUNTS_RECEIVABLE')).toBe(true);
    expect(labelsOf(res.body.items).sort()).toEqual([...AR_LABELS].sort());
    expect(res.body._meta).toStrictEqual({ page: 1, per_page: 100, total_pages: 1, total_items: 3 });
    const slim = await ar({ view: 'list', sort_by: 'invoice_number', sort_order: 'asc', per_page: 2 });
    expect(labelsOf(slim.body.items)).toEqual(['A1', 'A2']);
    expect(Object.keys(slim.body.items[0]).sort()).toEqual([...SLIM_FIELDS].sort());
    expect(new URL(slim.body._links.next).searchParams.get('page')).toBe('2');
    expect(labelsOf((await ar({ status: 'open,paid' })).body.items).sort()).toEqual(['A1', 'A3']);
    expectErrorBody(await ar({ status: 'received' }), 400);
    expect(labelsOf((await ar({ keyword: 'ar-000' })).body.items).sort()).toEqual(['A1', 'A2', 'A3']);
    expect(labelsOf((await ar({ keyword: 'inv-0001' })).body.items)).toEqual([]);
    // A member sees only the receivable invoices assigned to them.
    const member = await ar({ per_page: 100 }, p.orgA.member.key);
    expect(labelsOf(member.body.items)).toEqual(['A2']);
    expect(member.body._meta.total_items).toBe(1);
  });
});

describe('tenancy', () => {
  it("another organization's invoices never appear in orgA's lists, whatever the query", async () => {
    const foreign = new Set(d.orgBUids);
    const queries: Query[] = [
      { per_page: 100 },
      { per_page: 100, view: 'list' },
      { per_page: 100, keyword: 'zqnum' },
      { per_page: 100, keyword: 'orgb' },
      { per_page: 100, invoice_number: 'INV-0001' },
      { per_page: 100, status: 'received' },
      { per_page: 100, status: 'open' },
    ];
    for (const query of queries) {
      for (const res of [await ap(query), await ar(query)]) {
        if (res.status !== 200) continue; // mixed statuses are refused by one of the two lists
        for (const uid of uids(res.body.items)) expect(foreign.has(uid)).toBe(false);
        expect(res.raw).not.toContain('ORGB');
      }
    }
    expect(labelsOf((await ap({ keyword: 'zqnum' })).body.items)).toEqual(['I6']);
    // And orgB's admin sees orgB's own, nothing of orgA's.
    const b = await call(t.app, 'GET', apUrl(p.orgB.uid), {
      key: p.orgB.admin.key,
      query: { per_page: 100 },
    });
    expect(b.status).toBe(200);
    expect(uids(b.body.items).sort()).toEqual([d.orgBUids[0]]);
    expect(b.body._meta.total_items).toBe(1);
  });

  it('403 for lists of an organization the caller does not belong to; 400 for a bad organization_uid', async () => {
    for (const url of [apUrl(p.orgB.uid), arUrl(p.orgB.uid)]) {
      expectErrorBody(await call(t.app, 'GET', url, { key: p.orgA.admin.key }), 403);
      expectErrorBody(await call(t.app, 'GET', url, { key: p.orgA.member.key }), 403);
    }
    expectErrorBody(await call(t.app, 'GET', apUrl(p.orgA.uid), { key: p.orgB.admin.key }), 403);
    expectErrorBody(await call(t.app, 'GET', apUrl('not-a-uuid'), { key: p.orgA.admin.key }), 400);
    expectErrorBody(await call(t.app, 'GET', arUrl('not-a-uuid'), { key: p.orgA.admin.key }), 400);
  });

  commonRouteChecks(
    'GET /api/organization/{organization_uid}/ap-invoices',
    {
      method: 'GET',
      url: ({ p }) => apUrl(p.orgA.uid),
      scope: 'invoices:read',
      foreignOrganizationUrl: ({ p }) => apUrl(p.orgB.uid),
    },
    () => ({ t, p }),
  );

  commonRouteChecks(
    'GET /api/organization/{organization_uid}/ar-invoices',
    {
      method: 'GET',
      url: ({ p }) => arUrl(p.orgA.uid),
      scope: 'invoices:read',
      foreignOrganizationUrl: ({ p }) => arUrl(p.orgB.uid),
    },
    () => ({ t, p }),
  );
});
