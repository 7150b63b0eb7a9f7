import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
/** A party of orgB: orgA's callers must never see or touch it. */
let foreignParty: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING = '00000000-0000-4000-8000-000000000000';

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  foreignParty = (await createParty(p.orgB.admin.key, { name: 'Foreign Vendor', role: 'vendor' })).uid;
});
afterAll(async () => t?.close());

async function createParty(key: string, body: Record<string, unknown>) {
  const res = await call(t.app, 'POST', '/api/parties', { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const getParty = (uid: string, key = p.orgA.admin.key) => call(t.app, 'GET', `/api/parties/${uid}`, { key });
const patchParty = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/parties/${uid}`, { key, body });
const listParties = (query: Record<string, string | number>, key = p.orgA.admin.key) =>
  call(t.app, 'GET', '/api/parties', { key, query });
const tag = () => Math.random().toString(36).slice(2, 8);

describe('POST /api/parties', () => {
  it('creates a party with its billing contact: 201 in the envelope', async () => {
    const res = await call(t.app, 'POST', '/api/parties', {
      key: p.orgA.admin.key,
      body: {
        name: '  Acme Corp  ',
        role: 'client',
        address: '1 Main St, Springfield',
        tax_id: 'NIT-900-1',
        billing_contact: { name: 'Ana Pay', title: 'AP Lead', email: 'Ana@Acme.TEST', phone: '+1 555 0100' },
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    const party = res.body.data;
    expect(party).toEqual({
      uid: expect.stringMatching(UUID),
      organization_uid: p.orgA.uid,
      name: 'Acme Corp',
      role: 'client',
      address: '1 Main St, Springfield',
      tax_id: 'NIT-900-1',
      billing_contact: {
        uid: expect.stringMatching(UUID),
        party_uid: party.uid,
        name: 'Ana Pay',
        title: 'AP Lead',
        email: 'ana@acme.test',
        phone: '+1 555 0100',
      },
      archived_at: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
  });

  it('without a billing contact: billing_contact is null, address empty, tax_id null', async () => {
    const party = await createParty(p.orgA.admin.key, { name: 'Bare Vendor', role: 'vendor' });
    expect(party).toMatchObject({ billing_contact: null, address: '', tax_id: null, role: 'vendor' });
  });

  it('422 for a missing name, an unknown role or a malformed contact email', async () => {
    const post = (body: unknown) => call(t.app, 'POST', '/api/parties', { key: p.orgA.admin.key, body });
    expectErrorBody(await post({ role: 'client' }), 422, 'validation_failed');
    expectErrorBody(await post({ name: '', role: 'client' }), 422, 'validation_failed');
    expectErrorBody(await post({ name: 'x', role: 'supplier' }), 422, 'validation_failed');
    expectErrorBody(
      await post({ name: 'x', role: 'client', billing_contact: { email: 'not-an-email' } }),
      422,
      'validation_failed',
    );
  });

  it('a member with invoices:write may create parties too', async () => {
    const party = await createParty(p.orgA.member.key, { name: 'Member Made', role: 'client' });
    expect(party.organization_uid).toBe(p.orgA.uid);
  });

  commonRouteChecks(
    'POST /api/parties',
    {
      method: 'POST',
      url: () => '/api/parties',
      body: () => ({ name: 'Checked', role: 'client' }),
      scope: 'invoices:write',
      foreignOrganizationBody: ({ p }) => ({ name: 'Checked', role: 'client', organization_uid: p.orgB.uid }),
    },
    () => ({ t, p }),
  );
});

describe('GET /api/parties/{uid}', () => {
  it('returns the party as created', async () => {
    const created = await createParty(p.orgA.admin.key, {
      name: 'Fetch Me',
      role: 'vendor',
      billing_contact: { name: 'Bo' },
    });
    const res = await getParty(created.uid);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data).toEqual(created);
    expect(res.body.data.billing_contact).toMatchObject({ name: 'Bo', title: '', email: '', phone: '' });
  });

  it('400 for a uid that is not a uuid, 404 for an unknown one', async () => {
    expectErrorBody(await getParty('not-a-uuid'), 400, 'invalid_parameter');
    expectErrorBody(await getParty(MISSING), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/parties/{uid}',
    {
      method: 'GET',
      url: async ({ p }) =>
        `/api/parties/${(await createParty(p.orgA.admin.key, { name: 'Checked', role: 'client' })).uid}`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/parties/${foreignParty}`,
    },
    () => ({ t, p }),
  );
});

describe('PATCH /api/parties/{uid}', () => {
  const full = () => ({
    name: 'Patch Target',
    role: 'vendor',
    address: '2 Side St',
    tax_id: 'TAX-1',
    billing_contact: { name: 'Cy', title: 'CFO', email: 'cy@target.test', phone: '555' },
  });

  it('changes only the sent fields', async () => {
    const before = await createParty(p.orgA.admin.key, full());
    const res = await patchParty(before.uid, { address: '3 New Rd' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    const after = res.body.data;
    expect({ ...after, updated_at: before.updated_at }).toEqual({ ...before, address: '3 New Rd' });
    expect((await getParty(before.uid)).body.data).toEqual(after);

    const renamed = (await patchParty(before.uid, { name: 'Renamed', tax_id: null })).body.data;
    expect(renamed).toMatchObject({ name: 'Renamed', tax_id: null, address: '3 New Rd', role: 'vendor' });
    expect(renamed.billing_contact).toEqual(before.billing_contact);
  });

  it('a partial billing_contact changes only its sent fields; null removes the contact', async () => {
    const before = await createParty(p.orgA.admin.key, full());
    const partial = (await patchParty(before.uid, { billing_contact: { phone: '777' } })).body.data;
    expect(partial.billing_contact).toEqual({ ...before.billing_contact, phone: '777' });
    expect(partial.name).toBe(before.name);

    const removed = await patchParty(before.uid, { billing_contact: null });
    expect(removed.status).toBe(200);
    expect(removed.body.data.billing_contact).toBeNull();
    expect((await getParty(before.uid)).body.data.billing_contact).toBeNull();
    expect(removed.body.data).toMatchObject({ name: before.name, address: before.address });

    const added = (await patchParty(before.uid, { billing_contact: { name: 'New Contact' } })).body.data;
    expect(added.billing_contact).toMatchObject({
      party_uid: before.uid,
      name: 'New Contact',
      title: '',
      email: '',
      phone: '',
    });
  });

  it('an empty body changes nothing', async () => {
    const before = await createParty(p.orgA.admin.key, full());
    const after = (await patchParty(before.uid, {})).body.data;
    expect({ ...after, updated_at: before.updated_at }).toEqual(before);
  });

  it('renaming a party updates the names shown on its invoices (vendor_name, vendor_nit, parties)', async () => {
    const vendor = await createParty(p.orgA.admin.key, {
      name: `Old Vendor ${tag()}`,
      role: 'vendor',
      tax_id: 'NIT-OLD',
    });
    const client = await createParty(p.orgA.admin.key, { name: `Old Client ${tag()}`, role: 'client' });
    const create = async (body: Record<string, unknown>) => {
      const res = await call(t.app, 'POST', '/api/invoices', {
        key: p.orgA.admin.key,
        body: { currency: 'USD', invoice_number: `INV-${tag()}`, ...body },
      });
      expect(res.status, res.raw).toBe(201);
      return res.body.data;
    };
    const ap = await create({
      invoice_type: 'ACCOUNTS_PAYABLE',
      service_provider_party_uid: vendor.uid,
      client_party_uid: client.uid,
    });
    const ar = await create({ invoice_type: 'ACCOUNTS_RECEIVABLE', client_party_uid: client.uid });
    expect(ap).toMatchObject({ vendor_name: vendor.name, vendor_nit: 'NIT-OLD' });

    const newVendor = `New Vendor ${tag()}`;
    const newClient = `New Client ${tag()}`;
    expect((await patchParty(vendor.uid, { name: newVendor, tax_id: 'NIT-NEW' })).status).toBe(200);
    expect((await patchParty(client.uid, { name: newClient })).status).toBe(200);

    const apAfter = (await call(t.app, 'GET', `/api/invoices/${ap.uid}`, { key: p.orgA.admin.key })).body
      .data;
    expect(apAfter.vendor_name).toBe(newVendor);
    expect(apAfter.vendor_nit).toBe('NIT-NEW');
    expect(apAfter.parties.service_provider.name).toBe(newVendor);
    expect(apAfter.parties.client.name).toBe(newClient);
    const arAfter = (await call(t.app, 'GET', `/api/invoices/${ar.uid}`, { key: p.orgA.admin.key })).body
      .data;
    expect(arAfter.parties.client.name).toBe(newClient);

    // The payable list filters and shows the copy kept on the invoice.
    const list = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/ap-invoices`, {
      key: p.orgA.admin.key,
      query: { view: 'list', vendor_name: newVendor },
    });
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: { uid: string }) => i.uid)).toEqual([ap.uid]);
    expect(list.body.items[0]).toMatchObject({ vendor_name: newVendor, vendor_nit: 'NIT-NEW' });
    // The client name copy (for sorting and search) follows too.
    const rows = await t.db.execute(
      sql`select uid, client_name from invoices where uid in (${ap.uid}, ${ar.uid}) order by uid`,
    );
    const names = (rows as unknown as { rows: { client_name: string }[] }).rows.map((r) => r.client_name);
    expect(names).toEqual([newClient, newClient]);
  });

  it('422 for an empty name or an unknown role; 400 for a bad uuid; 404 for an unknown party', async () => {
    const party = await createParty(p.orgA.admin.key, full());
    expectErrorBody(await patchParty(party.uid, { name: '' }), 422, 'validation_failed');
    expectErrorBody(await patchParty(party.uid, { role: 'boss' }), 422, 'validation_failed');
    expectErrorBody(await patchParty('nope', { name: 'x' }), 400, 'invalid_parameter');
    expectErrorBody(await patchParty(MISSING, { name: 'x' }), 404, 'not_found');
    expect((await getParty(party.uid)).body.data.name).toBe('Patch Target');
  });

  it("another organization's party stays untouched", async () => {
    expectErrorBody(await patchParty(foreignParty, { name: 'Hijacked' }), 404, 'not_found');
    const theirs = await getParty(foreignParty, p.orgB.admin.key);
    expect(theirs.body.data.name).toBe('Foreign Vendor');
  });

  commonRouteChecks(
    'PATCH /api/parties/{uid}',
    {
      method: 'PATCH',
      url: async ({ p }) =>
        `/api/parties/${(await createParty(p.orgA.admin.key, { name: 'Checked', role: 'client' })).uid}`,
      body: () => ({ name: 'Checked again' }),
      scope: 'invoices:write',
      foreignUrl: () => `/api/parties/${foreignParty}`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/parties', () => {
  let run: string;
  const names = (res: { body: { data: { items: { name: string }[] } } }) =>
    res.body.data.items.map((i) => i.name).sort();

  beforeAll(async () => {
    run = tag();
    const key = p.orgA.admin.key;
    await createParty(key, {
      name: `Globex ${run}`,
      role: 'client',
      address: 'Oak Street 5',
      tax_id: 'gx-1',
    });
    await createParty(key, {
      name: `Initech ${run}`,
      role: 'vendor',
      address: 'Elm Road 7',
      tax_id: 'IT-77',
    });
    await createParty(key, { name: `50% Off ${run}`, role: 'vendor' });
    await createParty(key, { name: `500 Widgets ${run}`, role: 'vendor' });
    await createParty(key, { name: `snake_case ${run}`, role: 'client' });
    await createParty(key, { name: `snakeXcase ${run}`, role: 'client' });
    await createParty(p.orgB.admin.key, { name: `Globex ${run} of B`, role: 'client' });
  });

  it('q matches the name case-insensitively, only within the organization', async () => {
    const res = await listParties({ q: `GLOBEX ${run.toUpperCase()}` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(names(res)).toEqual([`Globex ${run}`]);
    expect(res.body.data.items[0].organization_uid).toBe(p.orgA.uid);
    expect(res.body.data._meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 1 });
  });

  it('q matches the address and the tax id, case-insensitively', async () => {
    const mine = (items: { name: string }[]) => items.filter((i) => i.name.includes(run));
    expect(mine((await listParties({ q: 'oak STREET' })).body.data.items).map((i) => i.name)).toEqual([
      `Globex ${run}`,
    ]);
    expect(mine((await listParties({ q: 'it-77' })).body.data.items).map((i) => i.name)).toEqual([
      `Initech ${run}`,
    ]);
    expect(mine((await listParties({ q: 'GX-1' })).body.data.items).map((i) => i.name)).toEqual([
      `Globex ${run}`,
    ]);
  });

  it('LIKE wildcards in q are literal', async () => {
    const percent = await listParties({ q: `50% Off ${run}` });
    expect(names(percent)).toEqual([`50% Off ${run}`]);
    expect(names(await listParties({ q: '0%' })).filter((n) => n.includes(run))).toEqual([`50% Off ${run}`]);
    expect(names(await listParties({ q: `e_case ${run}` }))).toEqual([`snake_case ${run}`]);
    expect(names(await listParties({ q: `e_c` })).filter((n) => n.includes(run))).toEqual([
      `snake_case ${run}`,
    ]);
    expect(names(await listParties({ q: '%' })).filter((n) => n.includes(run))).toEqual([`50% Off ${run}`]);
    expect(names(await listParties({ q: '\\' }))).toEqual([]);
  });

  it('filters by role', async () => {
    const vendors = (await listParties({ q: run, role: 'vendor' })).body.data.items;
    expect(vendors.map((v: { name: string }) => v.name).sort()).toEqual(
      [`50% Off ${run}`, `500 Widgets ${run}`, `Initech ${run}`].sort(),
    );
    expect(vendors.every((v: { role: string }) => v.role === 'vendor')).toBe(true);
    const clients = (await listParties({ q: run, role: 'client' })).body.data.items;
    expect(clients).toHaveLength(3);
    expect(clients.every((v: { role: string }) => v.role === 'client')).toBe(true);
  });

  it('pages, newest change first', async () => {
    const all = (await listParties({ q: run, per_page: 100 })).body.data;
    expect(all._meta).toEqual({ page: 1, per_page: 100, total_pages: 1, total_items: 6 });
    const page2 = (await listParties({ q: run, per_page: 4, page: 2 })).body.data;
    expect(page2._meta).toEqual({ page: 2, per_page: 4, total_pages: 2, total_items: 6 });
    expect(page2.items.map((i: { uid: string }) => i.uid)).toEqual(
      all.items.slice(4).map((i: { uid: string }) => i.uid),
    );
    const last = all.items[all.items.length - 1];
    await patchParty(last.uid, { address: 'touched' });
    try {
      expect((await listParties({ q: run, per_page: 1 })).body.data.items[0].uid).toBe(last.uid);
    } finally {
      // The address back: the q tests (in whatever order they run) search for it.
      await patchParty(last.uid, { address: last.address });
    }
  });

  it('400 for bad paging, an unknown role or a q over 200 characters', async () => {
    expectErrorBody(await listParties({ per_page: 0 }), 400, 'invalid_parameter');
    expectErrorBody(await listParties({ per_page: 101 }), 400, 'invalid_parameter');
    expectErrorBody(await listParties({ page: 0 }), 400, 'invalid_parameter');
    expectErrorBody(await listParties({ role: 'boss' }), 400, 'invalid_parameter');
    expectErrorBody(await listParties({ q: 'x'.repeat(201) }), 400, 'invalid_parameter');
  });

  commonRouteChecks(
    'GET /api/parties',
    {
      method: 'GET',
      url: () => '/api/parties',
      scope: 'invoices:read',
      foreignOrganizationUrl: ({ p }) => `/api/parties?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});
