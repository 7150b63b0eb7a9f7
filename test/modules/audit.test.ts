/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { runWithRole } from '../../src/platform/db/session-role.ts';
import { runAuditRetention } from '../../src/modules/audit/audit.jobs.ts';
import { jobOrigin, recordAuditEvent } from '../../src/modules/audit/audit.service.ts';
import {
  createCollectionsAgent,
  post,
  receivables,
  runAgent,
  tag,
  until,
  waitForRun,
} from '../helpers/agent-fixtures.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakePartner } from '../helpers/fake-partner.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type OrgPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * The audit log (docs/audit-log.md): `GET /api/organization/{uid}/audit-events` (happy path, every
 * error, security), what each kind of change records (before and after, the actor, the request id and
 * the client address), that a change and its event commit or roll back together, that the database
 * refuses to rewrite events, that an agent's change names its run, and retention with a fake clock.
 */

let t: TestApp;
let p: Principals;
let keyUids: Map<string, string>;
const partners: FakePartner[] = [];

const UUID_A = '00000000-0000-4000-8000-00000000000a';

const eventsUrl = (organizationUid: string) => `/api/organization/${organizationUid}/audit-events`;

async function list(
  org: OrgPrincipals,
  query: Record<string, string | number> = {},
  key = org.admin.key,
): Promise<{ items: any[]; _meta: any; _links: any }> {
  const res = await call(t.app, 'GET', eventsUrl(org.uid), { key, query: { per_page: 100, ...query } });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}

/** The events about one entity (and what belongs to it), newest first. */
const about = async (org: OrgPrincipals, entityUid: string, query: Record<string, string> = {}) =>
  (await list(org, { entity_uid: entityUid, ...query })).items;

/** The one event of this action about this entity. */
async function eventOf(org: OrgPrincipals, entityUid: string, action: string) {
  const found = (await about(org, entityUid)).filter(
    (e) => e.action === action && e.entity_uid === entityUid,
  );
  expect(found, `${action} of ${entityUid}`).toHaveLength(1);
  return found[0];
}

async function ok(
  method: string,
  url: string,
  key: string,
  body?: unknown,
  headers?: Record<string, string>,
) {
  const res = await call(t.app, method, url, { key, ...(body !== undefined ? { body } : {}), headers });
  expect(res.status, `${method} ${url}: ${res.raw}`).toBeLessThan(300);
  return res.body.data;
}

/** The uid of the key a principal calls with (the actor of its changes). */
async function keyUidOf(key: string): Promise<string> {
  if (!keyUids.has(key)) keyUids.set(key, (await ok('GET', '/api/me', key)).api_key.uid);
  return keyUids.get(key)!;
}

async function product(org: OrgPrincipals, price = 10_000) {
  const sku = `SKU-${tag()}`;
  await ok('POST', '/api/products', org.admin.key, {
    sku,
    name: 'Consulting',
    context_type: 'PRODUCT',
    unit_price: price,
    currency: 'USD',
  });
  return sku;
}

async function receivable(org: OrgPrincipals, extra: Record<string, unknown> = {}) {
  return ok('POST', '/api/invoices', org.admin.key, {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: `INV-${tag()}`,
    currency: 'USD',
    status: 'open',
    due_date: '2030-01-31',
    ...extra,
  });
}

/** The draft routes answer the bare draft (interface 2.1), not the envelope. */
async function saveDraft(key: string, body: Record<string, unknown>, status = 201) {
  const res = await call(t.app, 'POST', '/api/email/drafts', { key, body });
  expect(res.status, res.raw).toBe(status);
  return res.body;
}

beforeAll(async () => {
  t = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  keyUids = new Map();
});
afterAll(async () => {
  for (const partner of partners) await partner.close();
  await t?.close();
});

describe('GET /api/organization/{organization_uid}/audit-events', () => {
  it('lists the organization’s events newest first, paged, with the envelope of the other lists', async () => {
    const party = await ok('POST', '/api/parties', p.orgA.admin.key, { name: 'Paged Co', role: 'client' });
    for (const name of ['Paged Co 2', 'Paged Co 3']) {
      await ok('PATCH', `/api/parties/${party.uid}`, p.orgA.admin.key, { name });
    }
    const all = await about(p.orgA, party.uid);
    expect(all.map((e) => e.action)).toEqual(['party.updated', 'party.updated', 'party.created']);
    expect(all[0].changes).toEqual({ name: { before: 'Paged Co 2', after: 'Paged Co 3' } });

    const res = await call(t.app, 'GET', eventsUrl(p.orgA.uid), {
      key: p.orgA.admin.key,
      query: { entity_uid: party.uid, per_page: 1, page: 2 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: 'Audit events' });
    const page = res.body.data;
    expect(page._meta).toEqual({ page: 2, per_page: 1, total_pages: 3, total_items: 3 });
    expect(page.items.map((e: any) => e.uid)).toEqual([all[1].uid]);
    expect(page._links.self).toContain('page=2');
    expect(page._links.next).toContain('page=3');
    expect(page._links.prev).toContain('page=1');
    expect(Object.keys(page.items[0]).sort()).toEqual(
      [
        'uid',
        'organization_uid',
        'occurred_at',
        'actor_type',
        'actor_uid',
        'actor_user_uid',
        'action',
        'entity_type',
        'entity_uid',
        'parent_entity_type',
        'parent_entity_uid',
        'changes',
        'request_id',
        'client_address',
      ].sort(),
    );
    // Past the last page: an empty page, not an error.
    const beyond = await list(p.orgA, { entity_uid: party.uid, per_page: 1, page: 9 });
    expect(beyond.items).toEqual([]);
    expect(beyond._meta.total_items).toBe(3);
  });

  it('filters by actor, entity, action and time range (inclusive bounds; a bare date as `to` is that whole day)', async () => {
    const org = (await createPrincipals(t)).orgA;
    const scopedKey = (
      await ok('POST', '/api/api-keys', org.admin.key, { name: 'parties only', scopes: ['invoices:write'] })
    ).key;
    const byAdmin = await ok('POST', '/api/parties', org.admin.key, { name: 'By admin', role: 'client' });
    const byMember = await ok('POST', '/api/parties', org.member.key, { name: 'By member', role: 'vendor' });
    const byScoped = await ok('POST', '/api/parties', scopedKey, { name: 'By scoped key', role: 'client' });
    await ok('PATCH', `/api/parties/${byAdmin.uid}`, org.admin.key, { name: 'By admin, renamed' });
    const adminKey = await keyUidOf(org.admin.key);
    const uidsOf = async (query: Record<string, string>) =>
      (await list(org, query)).items.map((e) => `${e.action} ${e.entity_uid}`);

    expect(await uidsOf({ actor_uid: adminKey, entity_type: 'party' })).toEqual([
      `party.updated ${byAdmin.uid}`,
      `party.created ${byAdmin.uid}`,
    ]);
    // The person behind the keys: the admin's two keys' changes (the key created, parties).
    expect(await uidsOf({ actor_user_uid: org.admin.userUid, action: 'party.created' })).toEqual([
      `party.created ${byScoped.uid}`,
      `party.created ${byAdmin.uid}`,
    ]);
    expect(await uidsOf({ actor_user_uid: org.member.userUid })).toEqual([`party.created ${byMember.uid}`]);
    expect(await uidsOf({ action: 'party.updated' })).toEqual([`party.updated ${byAdmin.uid}`]);
    expect(await uidsOf({ entity_type: 'api_key' })).toHaveLength(1);
    expect(await uidsOf({ entity_uid: byMember.uid })).toEqual([`party.created ${byMember.uid}`]);
    expect((await list(org, { actor_type: 'api_key' }))._meta.total_items).toBe(5);
    expect((await list(org, { actor_type: 'agent_run' }))._meta.total_items).toBe(0);

    const events = (await list(org)).items;
    const newest = events[0].occurred_at as string;
    const oldest = events[events.length - 1].occurred_at as string;
    expect((await list(org, { from: oldest, to: newest }))._meta.total_items).toBe(5);
    expect((await list(org, { from: newest }))._meta.total_items).toBeGreaterThanOrEqual(1);
    expect((await list(org, { to: new Date(Date.parse(oldest) - 1).toISOString() }))._meta.total_items).toBe(
      0,
    );
    const today = newest.slice(0, 10);
    expect((await list(org, { from: today, to: today }))._meta.total_items).toBe(5);
    expect((await list(org, { from: '2001-01-01', to: '2001-12-31' }))._meta.total_items).toBe(0);
    expect((await list(org, { to: '2099-01-01T00:00:00+02:00' }))._meta.total_items).toBe(5);
  });

  it('400 for a filter that is not one of the known values, a bad uid, a bad date or page, and an unknown parameter', async () => {
    const bad: [Record<string, string | number>, string, string][] = [
      [{ actor_type: 'robot' }, 'actor_type', 'invalid_parameter'],
      [{ actor_uid: 'not-a-uuid' }, 'actor_uid', 'invalid_parameter'],
      [{ actor_user_uid: '123' }, 'actor_user_uid', 'invalid_parameter'],
      [{ entity_type: 'spaceship' }, 'entity_type', 'invalid_parameter'],
      [{ entity_uid: 'x' }, 'entity_uid', 'invalid_parameter'],
      [{ action: 'invoice.exploded' }, 'action', 'invalid_parameter'],
      [{ from: 'yesterday' }, 'from', 'invalid_parameter'],
      [{ from: '2026-02-30' }, 'from', 'invalid_parameter'],
      [{ to: '0000-01-01' }, 'to', 'invalid_parameter'],
      [{ to: '2026-03-05T14:30:00' }, 'to', 'invalid_parameter'],
      [{ page: 0 }, 'page', 'invalid_parameter'],
      [{ page: 'two' }, 'page', 'invalid_parameter'],
      [{ per_page: 101 }, 'per_page', 'invalid_parameter'],
      [{ sort: 'occurred_at' }, 'sort', 'unknown_parameter'],
    ];
    for (const [query, field, code] of bad) {
      const res = await call(t.app, 'GET', eventsUrl(p.orgA.uid), { key: p.orgA.admin.key, query });
      const body = expectErrorBody(res, 400, code);
      expect(body.errors?.[0]?.field, JSON.stringify(query)).toBe(field);
    }
  });

  it('400 when `from` is later than `to`', async () => {
    const res = await call(t.app, 'GET', eventsUrl(p.orgA.uid), {
      key: p.orgA.admin.key,
      query: { from: '2026-03-06', to: '2026-03-05T23:59:59Z' },
    });
    expect(expectErrorBody(res, 400, 'invalid_parameter').errors?.[0]?.field).toBe('from');
    // The same day as both bounds is one whole day, not an empty range.
    const sameDay = await call(t.app, 'GET', eventsUrl(p.orgA.uid), {
      key: p.orgA.admin.key,
      query: { from: '2026-03-05', to: '2026-03-05' },
    });
    expect(sameDay.status).toBe(200);
  });

  it('admins only: a member gets 403 (no role but admin holds audit:read), whatever the key says', async () => {
    expectErrorBody(
      await call(t.app, 'GET', eventsUrl(p.orgA.uid), { key: p.orgA.member.key }),
      403,
      'missing_scope',
    );
    // A member cannot mint a key with the scope either.
    expectErrorBody(
      await call(t.app, 'POST', '/api/api-keys', {
        key: p.orgA.member.key,
        body: { name: 'sneaky', scopes: ['audit:read'] },
      }),
      403,
      'forbidden',
    );
    // An admin's key that holds only audit:read reads the log.
    const auditor = await p.keyWithScopes(['audit:read']);
    expect((await call(t.app, 'GET', eventsUrl(p.orgA.uid), { key: auditor })).status).toBe(200);
  });

  it("another organization's events never show: its uid in the path is refused, its entities match nothing", async () => {
    const theirs = await ok('POST', '/api/parties', p.orgB.admin.key, { name: 'Theirs', role: 'client' });
    expectErrorBody(
      await call(t.app, 'GET', eventsUrl(p.orgB.uid), { key: p.orgA.admin.key }),
      403,
      'not_a_member',
    );
    expect((await list(p.orgA, { entity_uid: theirs.uid }))._meta.total_items).toBe(0);
    const everything = (await list(p.orgA, { per_page: 100 })).items;
    expect(everything.every((e) => e.organization_uid === p.orgA.uid)).toBe(true);
    expect((await about(p.orgB, theirs.uid)).map((e) => e.action)).toEqual(['party.created']);
  });

  it('reading the log records nothing, and no route changes or deletes an event', async () => {
    const before = (await list(p.orgA))._meta.total_items;
    await list(p.orgA);
    expect((await list(p.orgA))._meta.total_items).toBe(before);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await call(t.app, method, eventsUrl(p.orgA.uid), { key: p.orgA.admin.key, body: {} });
      expect(res.status, method).toBe(405);
    }
    expect(
      (await call(t.app, 'DELETE', `${eventsUrl(p.orgA.uid)}/${UUID_A}`, { key: p.orgA.admin.key })).status,
    ).toBe(404);
  });
});

commonRouteChecks(
  'GET /api/organization/{organization_uid}/audit-events',
  {
    method: 'GET',
    url: ({ p }) => eventsUrl(p.orgA.uid),
    scope: 'audit:read',
    foreignOrganizationUrl: ({ p }) => eventsUrl(p.orgB.uid),
  },
  () => ({ t, p }),
);

describe('what a change records', () => {
  it('who and from where: the key and its user, the request id, the client address, the time', async () => {
    const requestId = `req-${tag()}`;
    const before = Date.now();
    const party = await ok(
      'POST',
      '/api/parties',
      p.orgA.admin.key,
      { name: 'Traced', role: 'client' },
      { 'x-request-id': requestId },
    );
    const event = await eventOf(p.orgA, party.uid, 'party.created');
    expect(event).toMatchObject({
      organization_uid: p.orgA.uid,
      actor_type: 'api_key',
      actor_uid: await keyUidOf(p.orgA.admin.key),
      actor_user_uid: p.orgA.admin.userUid,
      entity_type: 'party',
      entity_uid: party.uid,
      parent_entity_type: null,
      parent_entity_uid: null,
      request_id: requestId,
      client_address: '127.0.0.1',
    });
    expect(Date.parse(event.occurred_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(event.occurred_at)).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('parties and their billing contact: created with every field, updated with before and after', async () => {
    const party = await ok('POST', '/api/parties', p.orgA.admin.key, {
      name: 'Contact Co',
      role: 'client',
      tax_id: 'NIT-1',
      billing_contact: { name: 'Ana', email: 'ana@contact.test' },
    });
    const created = await eventOf(p.orgA, party.uid, 'party.created');
    expect(created.changes).toMatchObject({
      name: { before: null, after: 'Contact Co' },
      role: { before: null, after: 'client' },
      tax_id: { before: null, after: 'NIT-1' },
      billing_contact: { before: null, after: { name: 'Ana', email: 'ana@contact.test' } },
    });
    await ok('PATCH', `/api/parties/${party.uid}`, p.orgA.admin.key, {
      tax_id: 'NIT-2',
      billing_contact: { email: 'billing@contact.test' },
    });
    const updated = await eventOf(p.orgA, party.uid, 'party.updated');
    expect(Object.keys(updated.changes).sort()).toEqual(['billing_contact', 'tax_id']);
    expect(updated.changes.tax_id).toEqual({ before: 'NIT-1', after: 'NIT-2' });
    expect(updated.changes.billing_contact.before.email).toBe('ana@contact.test');
    expect(updated.changes.billing_contact.after.email).toBe('billing@contact.test');
    // A PATCH that changes nothing records nothing.
    await ok('PATCH', `/api/parties/${party.uid}`, p.orgA.admin.key, { tax_id: 'NIT-2' });
    expect((await about(p.orgA, party.uid)).length).toBe(2);
  });

  it('invoices: created (with its line items), updated, status changes and approvals, assignees', async () => {
    const sku = await product(p.orgA);
    const invoice = await receivable(p.orgA, {
      status: 'draft',
      line_items: [{ context_type: 'PRODUCT', sku, quantity: 2 }],
    });
    const events = await about(p.orgA, invoice.uid);
    expect(events.map((e) => e.action).sort()).toEqual(['invoice.created', 'line_item.created']);
    const created = events.find((e) => e.action === 'invoice.created');
    expect(created.changes).toMatchObject({
      invoice_type: { before: null, after: 'ACCOUNTS_RECEIVABLE' },
      invoice_number: { before: null, after: invoice.invoice_number },
      status: { before: null, after: 'draft' },
      total_cents: { before: null, after: 20_000 },
    });
    const line = events.find((e) => e.action === 'line_item.created');
    expect(line).toMatchObject({
      entity_uid: invoice.line_items[0].uid,
      parent_entity_type: 'invoice',
      parent_entity_uid: invoice.uid,
    });
    expect(line.changes).toMatchObject({ sku: { before: null, after: sku }, quantity: { after: 2 } });
    // Two events of one change share the request and the instant.
    expect(line.request_id).toBe(created.request_id);
    expect(line.occurred_at).toBe(created.occurred_at);

    await ok('PUT', `/api/invoices/${invoice.uid}`, p.orgA.admin.key, {
      due_date: '2030-02-28',
      invoice_notes: { invoice_memo: 'Net 30' },
      assignee_user_uids: [p.orgA.member.userUid],
    });
    const updated = await eventOf(p.orgA, invoice.uid, 'invoice.updated');
    expect(updated.changes).toEqual({
      due_date: { before: '2030-01-31T00:00:00.000Z', after: '2030-02-28T00:00:00.000Z' },
      invoice_memo: { before: '', after: 'Net 30' },
      assignee_user_uids: { before: [], after: [p.orgA.member.userUid] },
    });

    await ok('PUT', `/api/invoices/${invoice.uid}`, p.orgA.admin.key, { status: 'open' });
    const moved = await eventOf(p.orgA, invoice.uid, 'invoice.status_changed');
    expect(moved.changes).toEqual({ status: { before: 'draft', after: 'open' } });

    // The same status again is no change.
    await ok('PUT', `/api/invoices/${invoice.uid}`, p.orgA.admin.key, { status: 'open' });
    expect(await about(p.orgA, invoice.uid, { entity_type: 'invoice' })).toHaveLength(3);

    const payable = await ok('POST', '/api/invoices', p.orgA.admin.key, {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `AP-${tag()}`,
      currency: 'USD',
    });
    await ok('PUT', `/api/invoices/${payable.uid}`, p.orgA.admin.key, { status: 'approved' });
    const approved = await eventOf(p.orgA, payable.uid, 'invoice.approved');
    expect(approved.changes.status).toEqual({ before: 'received', after: 'approved' });
    expect(approved.changes.approved_by).toEqual({ before: null, after: expect.any(Number) });
    expect(approved.changes.approval_date.before).toBeNull();
    expect((await list(p.orgA, { action: 'invoice.approved' })).items.map((e) => e.entity_uid)).toContain(
      payable.uid,
    );
  });

  it('line items: a batch is one event each (in one statement), an update shows before and after', async () => {
    const sku = await product(p.orgA, 1_000);
    const invoice = await receivable(p.orgA);
    const res = await call(t.app, 'POST', `/api/invoices/${invoice.uid}/line_items`, {
      key: p.orgA.admin.key,
      body: [
        { context_type: 'PRODUCT', sku, quantity: 1 },
        { context_type: 'PRODUCT', sku, quantity: 3 },
      ],
    });
    expect(res.status, res.raw).toBe(200);
    const [first, second] = res.body.data;
    const createdEvents = await about(p.orgA, invoice.uid, { action: 'line_item.created' });
    expect(createdEvents.map((e) => e.entity_uid).sort()).toEqual([first.uid, second.uid].sort());

    await ok('PUT', `/api/invoices/${invoice.uid}/line_items`, p.orgA.admin.key, [
      { uid: first.uid, quantity: 5 },
      { uid: second.uid, quantity: 3 },
    ]);
    // Only the line that changed.
    const updated = await about(p.orgA, invoice.uid, { action: 'line_item.updated' });
    expect(updated).toHaveLength(1);
    expect(updated[0]).toMatchObject({ entity_uid: first.uid, parent_entity_uid: invoice.uid });
    expect(updated[0].changes).toEqual({
      quantity: { before: 1, after: 5 },
      line_total: { before: 1_000, after: 5_000 },
    });
  });

  it('payments: recorded under their invoice; the one that settles it also records the move to paid', async () => {
    const sku = await product(p.orgA, 10_000);
    const invoice = await receivable(p.orgA, { line_items: [{ context_type: 'PRODUCT', sku }] });
    await ok('POST', `/api/invoices/${invoice.uid}/payments`, p.orgA.admin.key, {
      amount_cents: 4_000,
      paid_at: '2030-01-10T10:00:00Z',
    });
    const partial = (await about(p.orgA, invoice.uid, { action: 'payment.recorded' }))[0];
    expect(partial).toMatchObject({ entity_type: 'payment', parent_entity_uid: invoice.uid });
    expect(partial.changes).toMatchObject({
      amount_cents: { before: null, after: 4_000 },
      paid_at: { before: null, after: '2030-01-10T10:00:00.000Z' },
      created_by_user_uid: { before: null, after: p.orgA.admin.userUid },
    });
    expect(await about(p.orgA, invoice.uid, { action: 'invoice.status_changed' })).toEqual([]);

    await ok('POST', `/api/invoices/${invoice.uid}/payments`, p.orgA.admin.key, { amount_cents: 6_000 });
    const settled = await eventOf(p.orgA, invoice.uid, 'invoice.status_changed');
    expect(settled.changes).toMatchObject({
      status: { before: 'open', after: 'paid' },
      amount_remaining_cents: { before: 6_000, after: 0 },
    });
    expect(await about(p.orgA, invoice.uid, { action: 'payment.recorded' })).toHaveLength(2);
  });

  it('work tasks: created, updated, and the decision on an approval', async () => {
    const created = await ok('POST', '/api/work-tasks', p.orgA.admin.key, { title: 'Call the client' });
    expect((await eventOf(p.orgA, created.uid, 'task.created')).changes).toMatchObject({
      title: { before: null, after: 'Call the client' },
      type: { before: null, after: 'task' },
      status: { before: null, after: 'todo' },
    });
    await ok('PATCH', `/api/work-tasks/${created.uid}`, p.orgA.admin.key, { status: 'in_progress' });
    expect((await eventOf(p.orgA, created.uid, 'task.updated')).changes).toEqual({
      status: { before: 'todo', after: 'in_progress' },
    });

    const agent = await post(t, p.orgA.admin.key, '/api/agents', { name: `Outside ${tag()}` });
    const approval = await post(t, p.orgA.admin.key, `/api/agents/${agent.uid}/approvals`, {
      title: 'Refund?',
      reasoning: 'Double payment',
      tool_args: { type: 'refund', amount_cents: 100 },
      trigger: { type: 'manual' },
    });
    await ok('PATCH', `/api/work-tasks/${approval.uid}`, p.orgA.member.key, {
      action: 'approve',
      tool_args: { amount_cents: 90 },
      resolution_note: 'Partial',
    });
    const decided = await eventOf(p.orgA, approval.uid, 'task.decided');
    expect(decided).toMatchObject({
      actor_type: 'api_key',
      actor_user_uid: p.orgA.member.userUid,
    });
    expect(decided.changes).toMatchObject({
      status: { before: 'todo', after: 'done' },
      resolution: { before: null, after: 'approved' },
      resolution_note: { before: null, after: 'Partial' },
      resolved_by_user_uid: { before: null, after: p.orgA.member.userUid },
      tool_args: {
        before: { type: 'refund', amount_cents: 100 },
        after: { type: 'refund', amount_cents: 90 },
      },
    });
  });

  it('agent definitions: created and updated', async () => {
    const agent = await post(t, p.orgA.admin.key, '/api/agents', {
      name: `Definition ${tag()}`,
      instructions: 'Be polite.',
    });
    expect((await eventOf(p.orgA, agent.uid, 'agent.created')).changes).toMatchObject({
      name: { before: null, after: agent.name },
      status: { before: null, after: 'draft' },
      instructions: { before: null, after: 'Be polite.' },
    });
    await ok('PATCH', `/api/agents/${agent.uid}`, p.orgA.admin.key, { status: 'paused', description: 'x' });
    const updated = await eventOf(p.orgA, agent.uid, 'agent.updated');
    expect(updated.changes).toEqual({
      status: { before: 'draft', after: 'paused' },
      description: { before: '', after: 'x' },
    });
  });

  it('API keys: created (the snippet, never the key or its hash) and revoked (once)', async () => {
    const created = await ok('POST', '/api/api-keys', p.orgA.admin.key, {
      name: 'Reporting',
      scopes: ['invoices:read'],
    });
    const event = await eventOf(p.orgA, created.uid, 'api_key.created');
    expect(event.changes).toMatchObject({
      name: { before: null, after: 'Reporting' },
      scopes: { before: null, after: ['invoices:read'] },
      key_snippet: { before: null, after: created.key_snippet },
      user_uid: { before: null, after: p.orgA.admin.userUid },
    });
    const raw = JSON.stringify(event);
    expect(raw).not.toContain(created.key);
    expect(raw).not.toMatch(/key_hash|rk_live_[A-Za-z0-9]{10}/);

    await ok('DELETE', `/api/api-keys/${created.uid}`, p.orgA.admin.key);
    await ok('DELETE', `/api/api-keys/${created.uid}`, p.orgA.admin.key);
    const revoked = await eventOf(p.orgA, created.uid, 'api_key.revoked');
    expect(revoked.changes.revoked_at).toEqual({ before: null, after: expect.any(String) });
  });

  it('the billing integration: created, updated and deleted, the secret only ever "[redacted]"', async () => {
    const org = (await createPrincipals(t)).orgA;
    const partner = await FakePartner.start(`s-${crypto.randomBytes(16).toString('hex')}`);
    partners.push(partner);
    const path = `/api/organization/${org.uid}/integrations/billing`;
    const body = { type: 'http', url: partner.url(), secret: partner.secret };
    await ok('PUT', path, org.admin.key, body);
    const created = await eventOf(org, org.uid, 'billing_integration.created');
    expect(created.changes).toEqual({
      type: { before: null, after: 'http' },
      url: { before: null, after: partner.url() },
      secret: { before: null, after: '[redacted]' },
    });
    // The same secret again (sealed anew) is no change; a new URL is.
    await ok('PUT', path, org.admin.key, { ...body, url: partner.url('127.0.0.1', '/v2') });
    expect((await eventOf(org, org.uid, 'billing_integration.updated')).changes).toEqual({
      url: { before: partner.url(), after: partner.url('127.0.0.1', '/v2') },
    });
    const newSecret = `n-${crypto.randomBytes(16).toString('hex')}`;
    await ok('PUT', path, org.admin.key, { ...body, secret: newSecret });
    const rotated = (await list(org, { action: 'billing_integration.updated' })).items[0];
    expect(rotated.changes.secret).toEqual({ before: '[redacted]', after: '[redacted]' });
    await ok('DELETE', path, org.admin.key);
    const deleted = await eventOf(org, org.uid, 'billing_integration.deleted');
    expect(deleted.changes.secret).toEqual({ before: '[redacted]', after: null });
    const everything = JSON.stringify((await list(org)).items);
    expect(everything).not.toContain(partner.secret);
    expect(everything).not.toContain(newSecret);
  });

  it('organization settings: who turned segregation of duties on', async () => {
    const org = (await createPrincipals(t)).orgA;
    await ok('PATCH', `/api/organization/${org.uid}/settings`, org.admin.key, {
      segregation_of_duties: true,
    });
    const event = await eventOf(org, org.uid, 'organization.settings_changed');
    expect(event.changes).toEqual({ segregation_of_duties: { before: false, after: true } });
    expect(event.actor_user_uid).toBe(org.admin.userUid);
  });

  it('email: an account (its SMTP URL redacted), a draft created, rescheduled, canceled; a send by the job names who scheduled it', async () => {
    const org = (await createPrincipals(t)).orgA;
    const password = `pw-${tag()}`;
    const account = await post(t, org.admin.key, '/api/email/accounts', {
      email: 'ar@acme.test',
      display_name: 'AR',
      smtp_url: `smtp://ar:${password}@127.0.0.1:2525`,
    });
    const accountEvent = await eventOf(org, account.uid, 'email_account.created');
    expect(accountEvent.changes).toEqual({
      email: { before: null, after: 'ar@acme.test' },
      display_name: { before: null, after: 'AR' },
      smtp_url: { before: null, after: '[redacted]' },
    });
    expect(JSON.stringify(accountEvent)).not.toContain(password);

    const plain = await post(t, org.admin.key, '/api/email/accounts', {
      email: 'out@acme.test',
      display_name: 'Out',
    });
    const draft = await saveDraft(org.member.key, {
      from_account_id: plain.uid,
      to: ['client@client.test'],
      subject: 'Hello',
      body_text: 'The body stays on the draft',
      planned_send_at: '2099-01-01T00:00:00Z',
    });
    const createdEvent = await eventOf(org, draft.uid, 'email.created');
    expect(createdEvent.changes).toMatchObject({
      to: { before: null, after: ['client@client.test'] },
      subject: { before: null, after: 'Hello' },
      status: { before: null, after: 'draft' },
      planned_send_at: { before: null, after: '2099-01-01T00:00:00.000Z' },
    });
    expect(createdEvent.changes.body_text).toBeUndefined();

    await saveDraft(org.member.key, { uid: draft.uid, subject: 'Hello again' }, 200);
    expect((await eventOf(org, draft.uid, 'email.updated')).changes).toEqual({
      subject: { before: 'Hello', after: 'Hello again' },
    });
    const canceled = await call(t.app, 'DELETE', `/api/email/drafts/${draft.uid}`, { key: org.member.key });
    expect(canceled.status, canceled.raw).toBe(200);
    expect((await eventOf(org, draft.uid, 'email.canceled')).changes).toMatchObject({
      status: { before: 'draft', after: 'canceled' },
    });

    // Sent by the send job (the worker runs in this file): the actor is the key that scheduled it.
    const due = await saveDraft(org.member.key, {
      from_account_id: plain.uid,
      to: ['client@client.test'],
      subject: 'Due now',
      body_text: 'Pay',
      planned_send_at: new Date().toISOString(),
    });
    const sent = await until(
      async () => (await about(org, due.uid, { action: 'email.sent' }))[0],
      'the email.sent event',
    );
    expect(sent).toMatchObject({
      actor_type: 'api_key',
      actor_uid: await keyUidOf(org.member.key),
      actor_user_uid: org.member.userUid,
      client_address: null,
      request_id: expect.stringMatching(/^job:/),
    });
    expect(sent.changes).toMatchObject({
      status: { before: 'sending', after: 'sent' },
      sent_at: { before: null, after: expect.any(String) },
    });
  });
});

describe('a change and its event are one transaction', () => {
  it('a refused change records nothing', async () => {
    const invoice = await receivable(p.orgA);
    const before = (await about(p.orgA, invoice.uid)).length;
    expectErrorBody(
      await call(t.app, 'PUT', `/api/invoices/${invoice.uid}`, {
        key: p.orgA.admin.key,
        body: { status: 'approved' },
      }),
      422,
    );
    expectErrorBody(
      await call(t.app, 'POST', `/api/invoices/${invoice.uid}/payments`, {
        key: p.orgA.admin.key,
        body: { amount_cents: 1 },
      }),
      422,
    );
    expect((await about(p.orgA, invoice.uid)).length).toBe(before);
  });

  it('a billing partner that refuses an update: nothing changed, nothing recorded', async () => {
    const org = (await createPrincipals(t)).orgA;
    const partner = await FakePartner.start(`s-${crypto.randomBytes(16).toString('hex')}`);
    partners.push(partner);
    await ok('PUT', `/api/organization/${org.uid}/integrations/billing`, org.admin.key, {
      type: 'http',
      url: partner.url(),
      secret: partner.secret,
    });
    const invoice = await receivable(org);
    partner.next({ kind: 'fail', status: 500 });
    expectErrorBody(
      await call(t.app, 'PUT', `/api/invoices/${invoice.uid}`, {
        key: org.admin.key,
        body: { stamp_number: 'S-1' },
      }),
      502,
    );
    expect((await about(org, invoice.uid)).map((e) => e.action)).toEqual(['invoice.created']);
    partner.always({ kind: 'succeed' });
    await ok('PUT', `/api/invoices/${invoice.uid}`, org.admin.key, { stamp_number: 'S-1' });
    expect((await eventOf(org, invoice.uid, 'invoice.updated')).changes).toEqual({
      stamp_number: { before: null, after: 'S-1' },
    });
  });

  it('an event that cannot be written takes its change with it', async () => {
    const party = await ok('POST', '/api/parties', p.orgA.admin.key, { name: 'Unchanged', role: 'client' });
    const marker = `Blocked ${tag()}`;
    // As the owner, for this test only: a trigger that refuses the event of this one change.
    await rawQuery(
      t.db,
      `create function test_refuse_audit() returns trigger language plpgsql as $$
       begin
         if new.changes::text like '%${marker}%' then raise exception 'audit store unavailable'; end if;
         return new;
       end $$`,
    );
    await rawQuery(
      t.db,
      `create trigger test_refuse_audit before insert on audit_events for each row execute function test_refuse_audit()`,
    );
    try {
      const res = await call(t.app, 'PATCH', `/api/parties/${party.uid}`, {
        key: p.orgA.admin.key,
        body: { name: marker },
      });
      expectErrorBody(res, 500, 'internal_error');
    } finally {
      await rawQuery(t.db, 'drop trigger test_refuse_audit on audit_events');
      await rawQuery(t.db, 'drop function test_refuse_audit()');
    }
    expect((await ok('GET', `/api/parties/${party.uid}`, p.orgA.admin.key)).name).toBe('Unchanged');
    expect((await about(p.orgA, party.uid)).map((e) => e.action)).toEqual(['party.created']);
  });

  it('recordAuditEvent in a transaction that rolls back leaves no event', async () => {
    const entityUid = crypto.randomUUID();
    await expect(
      t.db.transaction(async (tx) => {
        await recordAuditEvent(tx, jobOrigin(null), {
          organizationUid: p.orgA.uid,
          action: 'member.added',
          entityUid,
        });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect((await list(p.orgA, { entity_uid: entityUid }))._meta.total_items).toBe(0);
  });
});

describe('the database keeps events as written', () => {
  const asTenant = <T>(organizationUids: string[], fn: () => Promise<T>) =>
    runWithRole({ role: { kind: 'tenant', organizationUids } }, fn);

  it('the tenant role (every request) may read and add events, never update or delete one', async () => {
    const party = await ok('POST', '/api/parties', p.orgA.admin.key, { name: 'Immutable', role: 'client' });
    const errorOf = (fn: () => Promise<unknown>) =>
      fn().then(
        () => null,
        (error: any) => String(error?.cause?.message ?? error?.message),
      );
    const org = [p.orgA.uid];
    const seen = await asTenant(org, () =>
      rawQuery<{ n: number }>(t.db, 'select count(*)::int as n from audit_events where entity_uid = $1', [
        party.uid,
      ]),
    );
    expect(seen[0]?.n).toBe(1);
    expect(
      await errorOf(() =>
        asTenant(org, () =>
          rawQuery(t.db, `update audit_events set action = 'party.updated' where entity_uid = $1`, [
            party.uid,
          ]),
        ),
      ),
    ).toMatch(/permission denied/);
    expect(
      await errorOf(() =>
        asTenant(org, () => rawQuery(t.db, 'delete from audit_events where entity_uid = $1', [party.uid])),
      ),
    ).toMatch(/permission denied/);
    expect(await errorOf(() => asTenant(org, () => rawQuery(t.db, 'truncate audit_events')))).toMatch(
      /permission denied/,
    );
    // Adding one is allowed, in the caller's own organizations only (row-level security).
    await asTenant(org, () =>
      t.db.transaction((tx) =>
        recordAuditEvent(tx, jobOrigin(null), {
          organizationUid: p.orgA.uid,
          action: 'member.added',
          entityUid: party.uid,
        }),
      ),
    );
    expect(
      await errorOf(() =>
        asTenant(org, () =>
          t.db.transaction((tx) =>
            recordAuditEvent(tx, jobOrigin(null), {
              organizationUid: p.orgB.uid,
              action: 'member.added',
              entityUid: party.uid,
            }),
          ),
        ),
      ),
    ).toMatch(/row-level security/);
    // Not even the owner rewrites an event.
    expect(
      await errorOf(() =>
        rawQuery(t.db, `update audit_events set action = 'party.updated' where entity_uid = $1`, [party.uid]),
      ),
    ).toMatch(/never updated/);
    expect((await about(p.orgA, party.uid)).map((e) => e.action)).toEqual(['member.added', 'party.created']);
  });
});

describe('an agent’s changes name its run', () => {
  it('the approval a collections run raises, the decision on it, and the follow-up run’s email', async () => {
    const org = (await createPrincipals(t)).orgA;
    const { client, invoice } = await receivables(t, org.admin.key);
    const party = await client();
    const overdue = await invoice(party.uid, { dueInDays: -20 });
    await post(t, org.admin.key, '/api/email/accounts', {
      email: `ar-${tag()}@acme.test`,
      display_name: 'AR',
    });
    const agent = await createCollectionsAgent(t, org.admin.key);
    const run = await runAgent(t, org.member.key, agent.uid, { trigger_type: 'manual' });
    expect(run.attributes.status, JSON.stringify(run.attributes)).toBe('completed');

    const raised = (await list(org, { action: 'task.created', actor_type: 'agent_run' })).items;
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({
      actor_type: 'agent_run',
      actor_uid: run.id,
      // The person who asked for the run.
      actor_user_uid: org.member.userUid,
      request_id: `run:${run.id}`,
      client_address: null,
    });
    expect(raised[0].changes).toMatchObject({
      type: { after: 'hil_approval' },
      run_uid: { after: run.id },
      context_entities: { after: [{ entity_type: 'invoice', entity_uid: overdue.uid }] },
    });

    const taskUid = raised[0].entity_uid;
    await ok('PATCH', `/api/work-tasks/${taskUid}`, org.admin.key, { action: 'approve' });
    expect((await eventOf(org, taskUid, 'task.decided')).actor_type).toBe('api_key');

    const sent = await until(
      async () => (await list(org, { action: 'email.sent' })).items[0],
      'the approved reminder to be sent',
    );
    const followUp = await waitForRun(t, org.admin.key, sent.actor_uid);
    expect(followUp.attributes.trigger_type).toBe('approval');
    expect(sent).toMatchObject({ actor_type: 'agent_run', actor_user_uid: org.admin.userUid });
    const drafted = await eventOf(org, sent.entity_uid, 'email.created');
    expect(drafted).toMatchObject({ actor_type: 'agent_run', actor_uid: followUp.id });
    expect(drafted.changes.context_id).toEqual({ before: null, after: overdue.uid });
  });
});

describe('retention (AUDIT_RETENTION_DAYS)', () => {
  it('is validated like the other settings: a whole number of days, 0 keeps events forever', () => {
    expect(loadConfig({}).auditRetentionDays).toBe(365);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '0' }).auditRetentionDays).toBe(0);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '2555' }).auditRetentionDays).toBe(2555);
    for (const value of ['-1', '30d', '1.5', '36501']) {
      expect(() => loadConfig({ AUDIT_RETENTION_DAYS: value }), value).toThrow(ConfigError);
    }
  });

  it('the daily job deletes the events older than the retention, as the owner, on the process clock', async () => {
    const org = (await createPrincipals(t)).orgA;
    const insertAt = async (occurredAt: string) => {
      const uid = crypto.randomUUID();
      await rawQuery(
        t.db,
        `insert into audit_events (organization_uid, occurred_at, actor_type, action, entity_type, entity_uid)
         values ($1, $2, 'system', 'party.updated', 'party', $3)`,
        [org.uid, occurredAt, uid],
      );
      return uid;
    };
    const old = await insertAt('2020-03-10T00:00:00Z');
    const recent = await insertAt('2020-03-20T00:00:00Z');
    const today = await insertAt(new Date().toISOString());
    const exists = async (uid: string) => (await list(org, { entity_uid: uid }))._meta.total_items === 1;

    vi.useFakeTimers({ toFake: ['Date'], now: new Date('2020-04-15T03:43:00Z') });
    try {
      // 0: kept forever.
      expect(
        await runAuditRetention({ database: t.database, config: { ...t.config, auditRetentionDays: 0 } }),
      ).toBe(0);
      expect(await exists(old)).toBe(true);
      // 30 days before 2020-04-15: 2020-03-16.
      const deleted = await runAuditRetention({
        database: t.database,
        config: { ...t.config, auditRetentionDays: 30 },
      });
      expect(deleted).toBeGreaterThanOrEqual(1);
    } finally {
      vi.useRealTimers();
    }
    expect(await exists(old)).toBe(false);
    expect(await exists(recent)).toBe(true);
    // Events of today are far inside any retention.
    expect(await exists(today)).toBe(true);
  });

  it('the purge is scheduled daily', async () => {
    const rows = await rawQuery<{ name: string; cron: string }>(
      t.db,
      `select name, cron from pgboss.schedule where name = 'remit.audit.purge'`,
    );
    expect(rows).toEqual([{ name: 'remit.audit.purge', cron: '43 3 * * *' }]);
  });
});
