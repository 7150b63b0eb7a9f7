/**
 * Archiving parties (issue 22, item 4; docs/invoices.md#archiving-a-party): `POST …/archive` and
 * `…/unarchive`, `archived_at` on the party, the default list without archived parties
 * (`include_archived`, `archived`), no archived party on a new invoice (409 `party_archived`) while the
 * invoices that name it keep it, the audit events and the `party.updated` webhook event, and the usual
 * route checks.
 */
import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let foreignParty: string;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => crypto.randomBytes(4).toString('hex');

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  foreignParty = (await newParty({ name: 'Foreign Co' }, p.orgB.admin.key)).uid;
});
afterAll(async () => t?.close());

async function newParty(body: Record<string, unknown> = {}, key = p.orgA.admin.key) {
  const res = await call(t.app, 'POST', '/api/parties', {
    key,
    body: { name: `Party ${tag()}`, role: 'client', ...body },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as { uid: string; name: string; archived_at: string | null; updated_at: string };
}
const archive = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'POST', `/api/parties/${uid}/archive`, { key });
const unarchive = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'POST', `/api/parties/${uid}/unarchive`, { key });
const list = (query: Record<string, string | number> = {}, key = p.orgA.admin.key) =>
  call(t.app, 'GET', '/api/parties', { key, query: { per_page: 100, ...query } });
const uidsOf = (res: { body: { data: { items: { uid: string }[] } } }) =>
  res.body.data.items.map((i) => i.uid);

async function newInvoice(body: Record<string, unknown>, key = p.orgA.admin.key) {
  return call(t.app, 'POST', '/api/invoices', {
    key,
    body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `INV-${tag()}`, currency: 'USD', ...body },
  });
}

async function auditOf(uid: string) {
  const result = await t.db.execute(
    sql`select action, changes, actor_type, request_id from audit_events where entity_uid = ${uid} order by occurred_at, action`,
  );
  return (result as unknown as { rows: { action: string; changes: Record<string, unknown> }[] }).rows;
}

async function eventsOf(uid: string) {
  const result = await t.db.execute(
    sql`select type, payload as data from events where entity_uid = ${uid} order by id`,
  );
  return (result as unknown as { rows: { type: string; data: Record<string, unknown> }[] }).rows;
}

describe('POST /api/parties/{uid}/archive and /unarchive', () => {
  it('archive: 200 with the party, archived_at set; GET shows it; unarchive clears it', async () => {
    const party = await newParty();
    expect(party.archived_at).toBeNull();
    const res = await archive(party.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: 'Party archived' });
    expect(res.body.data).toMatchObject({ uid: party.uid, name: party.name });
    expect(res.body.data.archived_at).toMatch(ISO);
    expect(
      (await call(t.app, 'GET', `/api/parties/${party.uid}`, { key: p.orgA.admin.key })).body.data,
    ).toEqual(res.body.data);

    const back = await unarchive(party.uid);
    expect(back.status, back.raw).toBe(200);
    expect(back.body.message).toBe('Party unarchived');
    expect(back.body.data.archived_at).toBeNull();
  });

  it('archiving twice keeps the first archived_at and records nothing more; so does unarchiving an active party', async () => {
    const party = await newParty();
    const first = (await archive(party.uid)).body.data;
    const again = await archive(party.uid);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first);
    const active = await newParty();
    const same = await unarchive(active.uid);
    expect(same.status).toBe(200);
    expect(same.body.data.archived_at).toBeNull();
    expect((await auditOf(party.uid)).map((e) => e.action)).toEqual(['party.created', 'party.archived']);
    expect((await auditOf(active.uid)).map((e) => e.action)).toEqual(['party.created']);
  });

  it('audit events party.archived and party.unarchived with archived_at before and after', async () => {
    const party = await newParty();
    const archivedAt = (await archive(party.uid)).body.data.archived_at;
    await unarchive(party.uid);
    const events = (await auditOf(party.uid)).filter((e) => e.action !== 'party.created');
    expect(events).toEqual([
      expect.objectContaining({
        action: 'party.archived',
        actor_type: 'api_key',
        changes: { archived_at: { before: null, after: archivedAt } },
      }),
      expect.objectContaining({
        action: 'party.unarchived',
        changes: { archived_at: { before: archivedAt, after: null } },
      }),
    ]);
  });

  it('webhook event party.updated with changed_fields ["archived_at"]', async () => {
    const party = await newParty();
    const archived = (await archive(party.uid)).body.data;
    const events = await eventsOf(party.uid);
    expect(events.map((e) => e.type)).toEqual(['party.updated']);
    expect(events[0]!.data).toEqual({ party: archived, changed_fields: ['archived_at'] });
  });

  it('a member may archive and unarchive (reversible, as editing a party is)', async () => {
    const party = await newParty();
    expect((await archive(party.uid, p.orgA.member.key)).status).toBe(200);
    expect((await unarchive(party.uid, p.orgA.member.key)).status).toBe(200);
  });

  it('404 for an unknown uid, 400 for a malformed one', async () => {
    expectErrorBody(await archive(MISSING), 404, 'not_found');
    expectErrorBody(await unarchive(MISSING), 404, 'not_found');
    expectErrorBody(await archive('nope'), 400, 'invalid_parameter');
  });

  for (const action of ['archive', 'unarchive'] as const) {
    commonRouteChecks(
      `POST /api/parties/{uid}/${action}`,
      {
        method: 'POST',
        url: async () => `/api/parties/${(await newParty()).uid}/${action}`,
        scope: 'invoices:write',
        foreignUrl: () => `/api/parties/${foreignParty}/${action}`,
      },
      () => ({ t, p }),
    );
  }
});

describe('GET /api/parties and archived parties', () => {
  it('leaves archived parties out by default; include_archived=true adds them; archived=true lists only them', async () => {
    const word = `Listed${tag()}`;
    const active = await newParty({ name: `${word} Active` });
    const archived = await newParty({ name: `${word} Archived` });
    await archive(archived.uid);

    expect(uidsOf(await list({ q: word }))).toEqual([active.uid]);
    expect(uidsOf(await list({ q: word, include_archived: 'false' }))).toEqual([active.uid]);
    expect(new Set(uidsOf(await list({ q: word, include_archived: 'true' })))).toEqual(
      new Set([active.uid, archived.uid]),
    );
    expect(uidsOf(await list({ q: word, archived: 'true' }))).toEqual([archived.uid]);
    expect(uidsOf(await list({ q: word, archived: 'false', include_archived: 'true' }))).toEqual([
      active.uid,
    ]);
    const counted = await list({ q: word });
    expect(counted.body.data._meta.total_items).toBe(1);

    await unarchive(archived.uid);
    expect(new Set(uidsOf(await list({ q: word })))).toEqual(new Set([active.uid, archived.uid]));
  });

  it('with role and without q, the default list still leaves archived parties out', async () => {
    const vendor = await newParty({ role: 'vendor' });
    await archive(vendor.uid);
    expect(uidsOf(await list({ role: 'vendor' }))).not.toContain(vendor.uid);
    expect(uidsOf(await list({}))).not.toContain(vendor.uid);
    expect(uidsOf(await list({ role: 'vendor', archived: 'true' }))).toContain(vendor.uid);
  });

  it('400 for an archived or include_archived that is not a boolean', async () => {
    expectErrorBody(await list({ archived: 'maybe' }), 400);
    expectErrorBody(await list({ include_archived: 'yes please' }), 400);
  });
});

describe('invoices and archived parties', () => {
  it('a new invoice cannot name an archived party (409 party_archived), as client or as service provider', async () => {
    const client = await newParty({ name: 'Archived Client' });
    const vendor = await newParty({ name: 'Archived Vendor', role: 'vendor' });
    await archive(client.uid);
    await archive(vendor.uid);
    const asClient = await newInvoice({ client_party_uid: client.uid });
    expectErrorBody(asClient, 409, 'party_archived');
    expect(asClient.body.message).toContain('Archived Client');
    expect(asClient.body.message).toContain('client_party_uid');
    const asVendor = await newInvoice({
      invoice_type: 'ACCOUNTS_PAYABLE',
      service_provider_party_uid: vendor.uid,
    });
    expectErrorBody(asVendor, 409, 'party_archived');
    expect(asVendor.body.message).toContain('service_provider_party_uid');
    // Unarchived, it can be used again.
    await unarchive(client.uid);
    expect((await newInvoice({ client_party_uid: client.uid })).status).toBe(201);
  });

  it('an invoice that names a party keeps it once archived; PUT may keep it, but not move another invoice to it', async () => {
    const client = await newParty({ name: 'Kept Client' });
    const created = await newInvoice({ client_party_uid: client.uid });
    expect(created.status, created.raw).toBe(201);
    const invoice = created.body.data.uid as string;
    await archive(client.uid);

    const got = await call(t.app, 'GET', `/api/invoices/${invoice}`, { key: p.orgA.admin.key });
    expect(got.body.data.parties.client).toMatchObject({ uid: client.uid, name: 'Kept Client' });
    // The interface's party summary on an invoice is unchanged: no archived_at there.
    expect(got.body.data.parties.client).not.toHaveProperty('archived_at');

    const put = (uid: string, body: Record<string, unknown>) =>
      call(t.app, 'PUT', `/api/invoices/${uid}`, { key: p.orgA.admin.key, body });
    const kept = await put(invoice, { client_party_uid: client.uid, invoice_number: `INV-${tag()}` });
    expect(kept.status, kept.raw).toBe(200);
    expect(kept.body.data.parties.client.uid).toBe(client.uid);

    const other = (await newInvoice({})).body.data.uid as string;
    expectErrorBody(await put(other, { client_party_uid: client.uid }), 409, 'party_archived');
    // Clearing the party, or naming an active one, is allowed.
    expect((await put(invoice, { client_party_uid: null })).status).toBe(200);
  });

  it('target_party_uid naming an archived party: 409 on create and on a PUT moving to it; an invoice keeps its own', async () => {
    const target = await newParty({ name: 'Archived Target' });
    const kept = await newInvoice({ target_party_uid: target.uid });
    expect(kept.status, kept.raw).toBe(201);
    await archive(target.uid);
    const refused = await newInvoice({ target_party_uid: target.uid });
    expectErrorBody(refused, 409, 'party_archived');
    expect(refused.body.message).toContain('target_party_uid');
    const put = (uid: string, body: Record<string, unknown>) =>
      call(t.app, 'PUT', `/api/invoices/${uid}`, { key: p.orgA.admin.key, body });
    expect((await put(kept.body.data.uid, { target_party_uid: target.uid })).status).toBe(200);
    const other = (await newInvoice({})).body.data.uid as string;
    expectErrorBody(await put(other, { target_party_uid: target.uid }), 409, 'party_archived');
    // A uid that names no party is stored as given, as before.
    expect((await newInvoice({ target_party_uid: crypto.randomUUID() })).status).toBe(201);
  });

  it('renaming an archived party still updates its invoices', async () => {
    const client = await newParty({ name: 'Old Name' });
    const invoice = (await newInvoice({ client_party_uid: client.uid })).body.data.uid as string;
    await archive(client.uid);
    const patched = await call(t.app, 'PATCH', `/api/parties/${client.uid}`, {
      key: p.orgA.admin.key,
      body: { name: 'New Name' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data.archived_at).toMatch(ISO);
    const got = await call(t.app, 'GET', `/api/invoices/${invoice}`, { key: p.orgA.admin.key });
    expect(got.body.data.parties.client.name).toBe('New Name');
  });
});
