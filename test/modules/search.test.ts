/**
 * GET /api/search (interface 4.4) and GET /api/work-tasks/context-search (interface 4.5): matching on
 * exactly the listed fields, suggest ordering, the round-robin spread, parameter errors and tenancy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { conversations, messages } from '../../src/modules/conversations/conversations.tables.ts';
import { documents } from '../../src/modules/documents/documents.tables.ts';
import { knowledgeDocuments } from '../../src/modules/knowledge/knowledge.tables.ts';

let t: TestApp;
let p: Principals;
const ids: Record<string, string> = {};

type Item = { entity_uid: string; entity_type: string; label: string; subtitle: string | null };

const day = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 86_400_000).toISOString();

async function post(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBeLessThan(300);
  return res.body.data;
}

/** The same words in both organizations: orgB's rows must never show up for orgA. */
async function seed(key: string, org: string, prefix: string) {
  await post(key, '/api/products', {
    sku: 'ZEBRA-SKU',
    name: 'Zebra',
    context_type: 'PRODUCT',
    unit_price: 125_000,
    currency: 'USD',
  });
  const client = await post(key, '/api/parties', {
    name: 'Zebra Stripes Ltd',
    role: 'client',
    address: '1 Quagga Lane, Lisbon',
  });
  const older = await post(key, '/api/parties', {
    name: 'Okapi Traders',
    role: 'client',
    address: 'Zebra Crossing 9',
  });
  await post(key, '/api/parties', {
    name: 'Zebra Vendor Co',
    role: 'vendor',
    address: 'Nowhere',
    tax_id: 'ZEBRA-TAX',
  });
  const inv1 = await post(key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: `${prefix}-ZEB-001`,
    status: 'open',
    currency: 'USD',
    issue_date: day(1),
    due_date: day(30),
    client_party_uid: client.uid,
    line_items: [{ context_type: 'PRODUCT', sku: 'ZEBRA-SKU', quantity: 1 }],
  });
  const inv2 = await post(key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: `${prefix}-777`,
    status: 'open',
    currency: 'USD',
    issue_date: day(5),
    due_date: day(35),
    client_party_uid: older.uid,
  });
  const task1 = await post(key, '/api/work-tasks', {
    title: 'Call about zebra invoice',
    description: 'n/a',
    due_date: '2026-02-01',
  });
  const task2 = await post(key, '/api/work-tasks', {
    title: 'Plain title',
    description: 'mentions ZEBRA in the description',
    status: 'in_review',
  });
  const [conv] = await t.db
    .insert(conversations)
    .values({ organizationUid: org, subject: 'Zebra payment question', channel: 'email', status: 'pending' })
    .returning();
  await t.db.insert(messages).values({
    organizationUid: org,
    conversationUid: conv!.uid,
    subject: 'About the zebra',
    fromEmail: 'ana@okapi.test',
    to: ['ar@us.test'],
  });
  const [doc] = await t.db
    .insert(documents)
    .values({
      organizationUid: org,
      filename: 'zebra-contract.pdf',
      documentName: 'Master agreement',
      contentType: 'application/pdf',
      fileSize: 10,
      sha256: 'x',
      storageKey: `k/${prefix}`,
    })
    .returning();
  const [know] = await t.db
    .insert(knowledgeDocuments)
    .values({
      organizationUid: org,
      filename: 'zebra-policy.docx',
      contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      s3ObjectName: `k/${prefix}`,
      status: 'ready',
    })
    .returning();
  await t.db.insert(knowledgeDocuments).values({
    organizationUid: org,
    filename: 'zebra-unconfirmed.pdf',
    contentType: 'application/pdf',
    s3ObjectName: `u/${prefix}`,
    status: 'presigned',
  });
  return {
    client: client.uid,
    older: older.uid,
    inv1: inv1.uid,
    inv2: inv2.uid,
    task1: task1.uid,
    task2: task2.uid,
    conv: conv!.uid,
    doc: doc!.uid,
    know: know!.uid,
  };
}

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  Object.assign(ids, await seed(p.orgA.admin.key, p.orgA.uid, 'A'));
  const foreign = await seed(p.orgB.admin.key, p.orgB.uid, 'B');
  ids.foreignInvoice = foreign.inv1;
}, 60_000);
afterAll(async () => t?.close());

const search = (query: Record<string, string | number>, key = p.orgA.admin.key) =>
  call(t.app, 'GET', '/api/search', { key, query });
const items = async (query: Record<string, string | number>) => {
  const res = await search(query);
  expect(res.status, res.raw).toBe(200);
  return res.body.data.data as Item[];
};

describe('GET /api/search: errors', () => {
  it('400 when q is missing or shorter than 2 characters in search mode', async () => {
    expectErrorBody(await search({}), 400);
    expectErrorBody(await search({ q: 'z' }), 400);
    expectErrorBody(await search({ q: ' z ' }), 400);
  });
  it('400 for an unknown type or mode, and for limit outside 1 to 50', async () => {
    expectErrorBody(await search({ q: 'zebra', types: 'invoice,vendor' }), 400);
    expectErrorBody(await search({ q: 'zebra', mode: 'fuzzy' }), 400);
    expectErrorBody(await search({ q: 'zebra', limit: 0 }), 400);
    expectErrorBody(await search({ q: 'zebra', limit: 51 }), 400);
  });
  it('400 for a malformed organization_uid, 403 for an organization the caller is not in', async () => {
    expectErrorBody(await search({ q: 'zebra', organization_uid: 'nope' }), 400);
    expectErrorBody(await search({ q: 'zebra', organization_uid: p.orgB.uid }), 403, 'not_a_member');
  });
});

describe('GET /api/search: matching (rule 1)', () => {
  it('finds every type by its listed fields, case-insensitively, under data.data', async () => {
    const found = await items({ q: 'ZeBrA', limit: 50 });
    const byType = (type: string) => found.filter((i) => i.entity_type === type).map((i) => i.entity_uid);
    // invoice by number (A-ZEB-001) and by customer name (Zebra Stripes on inv1); inv2 only by neither
    expect(byType('invoice')).toEqual([ids.inv1]);
    // customers by name and by address; the vendor named Zebra is not a customer
    expect(byType('customer').sort()).toEqual([ids.client, ids.older].sort());
    // tasks by title and by description
    expect(byType('task').sort()).toEqual([ids.task1, ids.task2].sort());
    expect(byType('conversation')).toEqual([ids.conv]);
    expect(byType('document')).toEqual([ids.doc]);
    // a presign never confirmed is not a document yet
    expect(byType('knowledge')).toEqual([ids.know]);
  });

  it('matches invoices by total amount, tasks by status, conversations by channel and status, documents by name', async () => {
    expect((await items({ q: '1250.00', types: 'invoice' })).map((i) => i.entity_uid)).toEqual([ids.inv1]);
    expect((await items({ q: 'in_rev', types: 'task' })).map((i) => i.entity_uid)).toEqual([ids.task2]);
    expect((await items({ q: 'pend', types: 'conversation' })).map((i) => i.entity_uid)).toEqual([ids.conv]);
    expect((await items({ q: 'emai', types: 'conversation' })).map((i) => i.entity_uid)).toEqual([ids.conv]);
    expect((await items({ q: 'master agree', types: 'document' })).map((i) => i.entity_uid)).toEqual([
      ids.doc,
    ]);
  });

  it('does not match fields outside the list', async () => {
    // the vendor's tax id, a party's role, the knowledge content type, an invoice's currency
    expect(await items({ q: 'ZEBRA-TAX' })).toEqual([]);
    expect(await items({ q: 'wordprocessingml', types: 'knowledge' })).toEqual([]);
    expect(await items({ q: 'USD', types: 'invoice' })).toEqual([]);
  });

  it('treats LIKE wildcards in q as text', async () => {
    expect(await items({ q: '%%' })).toEqual([]);
    expect(await items({ q: '__' })).toEqual([]);
    expect((await items({ q: 'zeb_a', types: 'customer' })).length).toBe(0);
  });

  it('gives each type its label and subtitle', async () => {
    const found = await items({ q: 'zebra', limit: 50 });
    const get = (uid: string) => found.find((i) => i.entity_uid === uid);
    expect(get(ids.inv1!)).toEqual({
      entity_uid: ids.inv1,
      entity_type: 'invoice',
      label: 'A-ZEB-001',
      subtitle: 'Zebra Stripes Ltd · $1,250.00',
    });
    expect(get(ids.client!)).toMatchObject({ label: 'Zebra Stripes Ltd', subtitle: '1 Quagga Lane, Lisbon' });
    expect(get(ids.task1!)).toMatchObject({
      label: 'Call about zebra invoice',
      subtitle: 'todo · due 2026-02-01',
    });
    expect(get(ids.task2!)).toMatchObject({ subtitle: 'in_review · no due date' });
    expect(get(ids.conv!)).toMatchObject({ label: 'Zebra payment question', subtitle: 'email · pending' });
    expect(get(ids.doc!)).toMatchObject({ label: 'Master agreement', subtitle: 'zebra-contract.pdf' });
    expect(get(ids.know!)).toMatchObject({
      label: 'zebra-policy.docx',
      subtitle: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    });
  });

  it("never returns another organization's rows, and searches the organization named", async () => {
    const found = await items({ q: 'zebra', limit: 50 });
    expect(found.some((i) => i.label.startsWith('B-'))).toBe(false);
    const asB = await search({ q: 'zebra', limit: 50 }, p.orgB.admin.key);
    expect(asB.body.data.data.some((i: Item) => i.entity_uid === ids.foreignInvoice)).toBe(true);
    expect(
      asB.body.data.data.some(
        (i: Item) => Object.values(ids).includes(i.entity_uid) && i.entity_uid !== ids.foreignInvoice,
      ),
    ).toBe(false);
    const explicit = await items({ q: 'zebra', limit: 50, organization_uid: p.orgA.uid });
    expect(explicit.map((i) => i.entity_uid).sort()).toEqual(found.map((i) => i.entity_uid).sort());
  });
});

describe('GET /api/search: suggest (rule 2) and round-robin (rule 3)', () => {
  it('ignores q in suggest mode and lists recent entities newest first', async () => {
    const found = await items({ mode: 'suggest', q: 'x', types: 'invoice,customer,task', limit: 6 });
    // invoices by issue date (inv2 issued later), customers by last update, tasks by creation
    expect(found.filter((i) => i.entity_type === 'invoice').map((i) => i.entity_uid)).toEqual([
      ids.inv2,
      ids.inv1,
    ]);
    expect(found.filter((i) => i.entity_type === 'task').map((i) => i.entity_uid)).toEqual([
      ids.task2,
      ids.task1,
    ]);
    const moveClient = (address: string) =>
      call(t.app, 'PATCH', `/api/parties/${ids.client}`, { key: p.orgA.admin.key, body: { address } });
    await moveClient('2 Quagga Lane, Lisbon');
    try {
      const again = await items({ mode: 'suggest', types: 'customer', limit: 2 });
      expect(again[0]!.entity_uid).toBe(ids.client);
    } finally {
      // The address back: the subtitle test (in whatever order it runs) expects it.
      await moveClient('1 Quagga Lane, Lisbon');
    }
  });

  it('deals results type by type, each type capped at ceil(limit / types)', async () => {
    const found = await items({ mode: 'suggest', types: 'task,invoice,customer', limit: 5 });
    // share = ceil(5/3) = 2: task, invoice, customer, task, invoice
    expect(found.map((i) => i.entity_type)).toEqual(['task', 'invoice', 'customer', 'task', 'invoice']);
    const one = await items({ mode: 'suggest', types: 'task,invoice', limit: 1 });
    expect(one.map((i) => i.entity_type)).toEqual(['task']);
    const defaults = await items({ mode: 'suggest' });
    expect(defaults.length).toBeLessThanOrEqual(12);
    // 6 types, share 2: never more than 2 of one type
    for (const type of ['invoice', 'customer', 'task', 'conversation', 'document', 'knowledge'])
      expect(defaults.filter((i) => i.entity_type === type).length).toBeLessThanOrEqual(2);
  });
});

commonRouteChecks(
  'GET /api/search',
  {
    method: 'GET',
    url: () => '/api/search?q=zebra',
    scope: 'search:read',
    foreignOrganizationUrl: ({ p }) => `/api/search?q=zebra&organization_uid=${p.orgB.uid}`,
  },
  () => ({ t, p }),
);

describe('GET /api/work-tasks/context-search', () => {
  const ctxSearch = (query: Record<string, string | number>, key = p.orgA.admin.key) =>
    call(t.app, 'GET', '/api/work-tasks/context-search', { key, query });

  it('finds invoices by number and counterparty, parties by name, messages by subject and sender', async () => {
    const res = await ctxSearch({ q: 'zeb' });
    expect(res.status, res.raw).toBe(200);
    const { invoices, parties, messages: msgs } = res.body.data;
    expect(invoices).toEqual([
      {
        uid: ids.inv1,
        invoice_number: 'A-ZEB-001',
        counterparty_name: 'Zebra Stripes Ltd',
        amount_due_cents: 125_000,
        currency: 'USD',
      },
    ]);
    expect(parties.map((x: { name: string }) => x.name).sort()).toEqual([
      'Zebra Stripes Ltd',
      'Zebra Vendor Co',
    ]);
    expect(msgs).toEqual([
      { uid: expect.any(String), subject: 'About the zebra', from_email: 'ana@okapi.test' },
    ]);
    const bySender = await ctxSearch({ q: 'okapi.test' });
    expect(bySender.body.data.messages).toHaveLength(1);
    const byCounterparty = await ctxSearch({ q: 'okapi trad', entity_type: 'invoice' });
    expect(byCounterparty.body.data.invoices.map((x: { uid: string }) => x.uid)).toEqual([ids.inv2]);
  });

  it('limits to one entity type and to per_page', async () => {
    const res = await ctxSearch({ q: 'zebra', entity_type: 'party', per_page: 1 });
    expect(res.body.data.invoices).toEqual([]);
    expect(res.body.data.messages).toEqual([]);
    expect(res.body.data.parties).toHaveLength(1);
  });

  it('400 for a short q, an unknown entity_type, per_page outside 1 to 50, a malformed organization_uid', async () => {
    expectErrorBody(await ctxSearch({}), 400);
    expectErrorBody(await ctxSearch({ q: 'z' }), 400);
    expectErrorBody(await ctxSearch({ q: 'zebra', entity_type: 'task' }), 400);
    expectErrorBody(await ctxSearch({ q: 'zebra', per_page: 0 }), 400);
    expectErrorBody(await ctxSearch({ q: 'zebra', per_page: 51 }), 400);
    expectErrorBody(await ctxSearch({ q: 'zebra', organization_uid: 'bad' }), 400);
  });

  it("403 for another organization; never another organization's rows", async () => {
    expectErrorBody(await ctxSearch({ q: 'zebra', organization_uid: p.orgB.uid }), 403);
    const res = await ctxSearch({ q: 'B-ZEB' });
    expect(res.body.data.invoices).toEqual([]);
  });

  it('escapes LIKE wildcards', async () => {
    const res = await ctxSearch({ q: '%_' });
    expect(res.body.data).toEqual({ invoices: [], parties: [], messages: [] });
  });
});

commonRouteChecks(
  'GET /api/work-tasks/context-search',
  {
    method: 'GET',
    url: () => '/api/work-tasks/context-search?q=zebra',
    scope: 'work_tasks:read',
    foreignOrganizationUrl: ({ p }) =>
      `/api/work-tasks/context-search?q=zebra&organization_uid=${p.orgB.uid}`,
  },
  () => ({ t, p }),
);

describe('search indexes', () => {
  it('has a trigram index on every searched field', async () => {
    const rows = await t.db.execute<{ indexdef: string }>(
      sql`select indexdef from pg_indexes where indexdef ilike '%gin_trgm_ops%'`,
    );
    const defs = (
      (rows as unknown as { rows?: { indexdef: string }[] }).rows ??
      (rows as unknown as { indexdef: string }[])
    )
      .map((r) => r.indexdef)
      .join('\n');
    for (const field of [
      'invoice_number',
      'client_name',
      'total_cents',
      'parties USING gin (name',
      'address',
      'title',
      'description',
      'work_tasks USING gin (status',
      'subject',
      'channel',
      'conversations USING gin (status',
      'filename',
      'document_name',
      'from_email',
    ])
      expect(defs, field).toContain(field);
  });
});
