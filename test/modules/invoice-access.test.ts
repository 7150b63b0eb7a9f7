import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * One access rule for invoices on every path (issue 14, docs/authentication.md): admins see every
 * invoice of their organization; members only those assigned to them (assignee or responsible). Approving a payable needs an admin or its responsible user; with
 * segregation of duties, never the user who entered it.
 */
let t: TestApp;
let p: Principals;
let admin: string;
let member: string;
let memberId: number;
let secondAdmin: string;
let vendor: string;
let client: string;
let receivable: string;
let hiddenReceivable: string;
let unassigned: string;
let assigned: string;
let responsibleOf: string;
let foreign: string;

const tag = () => crypto.randomBytes(3).toString('hex');
async function post(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBeLessThan(300);
  return res.body.data;
}
const payable = (extra: Record<string, unknown> = {}, key = admin) =>
  post(key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_PAYABLE',
    invoice_number: `AP-${tag()}`,
    currency: 'USD',
    service_provider_party_uid: vendor,
    ...extra,
  });

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
  admin = p.orgA.admin.key;
  member = p.orgA.member.key;
  memberId = (await call(t.app, 'GET', '/api/me', { key: member })).body.data.user.id;
  // A second admin of org A.
  const { addUserToOrganization } = await import('../../src/modules/tenancy/tenancy.service.ts');
  secondAdmin = (
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgA.uid,
      email: `admin2-${tag()}@a.test`,
      fullName: 'Second Admin',
      role: 'admin',
    })
  ).api_key;
  vendor = (await post(admin, '/api/parties', { name: 'Vendor Zeta', role: 'vendor' })).uid;
  client = (await post(admin, '/api/parties', { name: 'Quokka Holdings', role: 'client' })).uid;
  receivable = (
    await post(admin, '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `AR-ACCESS-1`,
      currency: 'USD',
      client_party_uid: client,
      assignee_user_uids: [p.orgA.member.userUid],
    })
  ).uid;
  hiddenReceivable = (
    await post(admin, '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: 'AR-HIDDEN-1',
      currency: 'USD',
    })
  ).uid;
  unassigned = (await payable({ invoice_number: 'AP-HIDDEN-1' })).uid;
  assigned = (await payable({ invoice_number: 'AP-ASSIGNED-1', assignee_user_uids: [p.orgA.member.userUid] }))
    .uid;
  responsibleOf = (
    await payable({ invoice_number: 'AP-RESP-1', responsible_user_uid: p.orgA.member.userUid })
  ).uid;
  foreign = (
    await post(p.orgB.admin.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: 'AP-HIDDEN-B',
      currency: 'USD',
    })
  ).uid;
});
afterAll(async () => t?.close());

describe('an invoice not assigned to a member answers 404 on every path, exactly like a foreign one', () => {
  const paths = (uid: string) =>
    [
      ['GET', `/api/invoices/${uid}`, undefined],
      ['PUT', `/api/invoices/${uid}`, { invoice_number: 'X' }],
      ['POST', `/api/invoices/${uid}/line_items`, { context_type: 'PRODUCT', sku: 'NOPE' }],
      ['PUT', `/api/invoices/${uid}/line_items`, { uid: crypto.randomUUID(), quantity: 1 }],
      ['POST', `/api/invoices/${uid}/comments`, { text: 'hi' }],
      ['PATCH', `/api/invoices/${uid}/comments/${crypto.randomUUID()}`, { resolved: true }],
      ['POST', `/api/invoices/${uid}/payments`, { amount_cents: 100, paid_at: '2026-01-01T00:00:00Z' }],
      ['GET', `/api/invoices/${uid}/attachments`, undefined],
    ] as const;

  it('member: hidden and foreign answer the same 404 body', async () => {
    for (const [[method, url, body], [, foreignUrl]] of paths(unassigned).map(
      (x, i) => [x, paths(foreign)[i]!] as const,
    )) {
      const hidden = await call(t.app, method, url, { key: member, ...(body ? { body } : {}) });
      const other = await call(t.app, method, foreignUrl, { key: member, ...(body ? { body } : {}) });
      expectErrorBody(hidden, 404, 'not_found');
      expectErrorBody(other, 404, 'not_found');
      expect(hidden.body.message, `${method} ${url}`).toBe(other.body.message);
    }
  });

  it('member: the attachment upload is refused with 404 before the file is read', async () => {
    const form = new FormData();
    form.append('file', new Blob(['x']), 'a.txt');
    const response = await t.app.inject({
      method: 'POST',
      url: `/api/invoices/${unassigned}/attachments`,
      headers: { authorization: `Bearer ${member}`, 'content-type': 'multipart/form-data; boundary=b' },
      payload: '--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nx\r\n--b--\r\n',
    });
    expect(response.statusCode).toBe(404);
  });

  it('member: email prepare with the hidden payable is a 404', async () => {
    const res = await call(t.app, 'POST', '/api/email/prepare', {
      key: member,
      body: {
        context_type: 'invoice',
        context_uid: unassigned,
        mode: 'template',
        subject: 'x',
        body_text: '{invoice_number}',
      },
    });
    expectErrorBody(res, 404, 'not_found');
  });

  it('admin: sees it everywhere', async () => {
    expect((await call(t.app, 'GET', `/api/invoices/${unassigned}`, { key: admin })).status).toBe(200);
  });
});

describe('what a member sees', () => {
  it('the invoices assigned to them or that they are responsible for, receivable or payable', async () => {
    for (const uid of [receivable, assigned, responsibleOf]) {
      expect((await call(t.app, 'GET', `/api/invoices/${uid}`, { key: member })).status, uid).toBe(200);
    }
    expectErrorBody(
      await call(t.app, 'GET', `/api/invoices/${hiddenReceivable}`, { key: member }),
      404,
      'not_found',
    );
    const ap = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/ap-invoices?per_page=100`, {
      key: member,
    });
    const apUids = ap.body.items.map((i: { uid: string }) => i.uid);
    expect(apUids.sort()).toEqual([assigned, responsibleOf].sort());
    const ar = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/ar-invoices?per_page=100`, {
      key: member,
    });
    expect(ar.body.items.map((i: { uid: string }) => i.uid)).toEqual([receivable]);
  });

  it('search and the work-task context search find only what the member may see', async () => {
    const search = async (key: string) =>
      (await call(t.app, 'GET', '/api/search?q=AP-&types=invoice&limit=50', { key })).body.data.data.map(
        (i: { entity_uid: string }) => i.entity_uid,
      );
    expect(await search(admin)).toContain(unassigned);
    const seen = await search(member);
    expect(seen).not.toContain(unassigned);
    expect(seen).toEqual(expect.arrayContaining([assigned, responsibleOf]));
    const context = async (key: string) =>
      (
        await call(t.app, 'GET', '/api/work-tasks/context-search?q=AP-&entity_type=invoice&per_page=50', {
          key,
        })
      ).body.data.invoices.map((i: { uid: string }) => i.uid);
    expect(await context(admin)).toContain(unassigned);
    expect(await context(member)).not.toContain(unassigned);
  });
});

describe('approving a payable', () => {
  const approve = (uid: string, key: string) =>
    call(t.app, 'PUT', `/api/invoices/${uid}`, { key, body: { status: 'approved' } });

  it('a member who is only assigned: 403 forbidden with the reason; the responsible member: 200', async () => {
    const refused = await approve(assigned, member);
    expect(expectErrorBody(refused, 403, 'forbidden').message).toMatch(/responsible/);
    expect((await call(t.app, 'GET', `/api/invoices/${assigned}`, { key: admin })).body.data.status).not.toBe(
      'approved',
    );
    const ok = await approve(responsibleOf, member);
    expect(ok.status, ok.raw).toBe(200);
    expect(ok.body.data.approved_by).toBe(memberId);
  });

  it('a member cannot make themselves responsible (or reassign) a payable', async () => {
    const res = await call(t.app, 'PUT', `/api/invoices/${assigned}`, {
      key: member,
      body: { responsible_user_uid: p.orgA.member.userUid },
    });
    expectErrorBody(res, 403, 'forbidden');
    const reassign = await call(t.app, 'PUT', `/api/invoices/${assigned}`, {
      key: member,
      body: { assignee_user_uids: [] },
    });
    expectErrorBody(reassign, 403, 'forbidden');
  });

  it('segregation of duties: off by default; on, the user who entered a payable cannot approve it', async () => {
    const settings = `/api/organization/${p.orgA.uid}/settings`;
    const initial = await call(t.app, 'GET', settings, { key: member });
    expect(initial.status).toBe(200);
    expect(initial.body.data.segregation_of_duties).toBe(false);
    // Off: the admin who entered it may approve.
    expect((await approve((await payable()).uid, admin)).status).toBe(200);

    expectErrorBody(
      await call(t.app, 'PATCH', settings, { key: member, body: { segregation_of_duties: true } }),
      403,
      'missing_scope',
    );
    const on = await call(t.app, 'PATCH', settings, { key: admin, body: { segregation_of_duties: true } });
    expect(on.status, on.raw).toBe(200);
    expect(on.body.data.segregation_of_duties).toBe(true);

    const entered = (await payable()).uid;
    const refused = await approve(entered, admin);
    expect(expectErrorBody(refused, 403, 'forbidden').message).toMatch(/segregation of duties/i);
    expect((await approve(entered, secondAdmin)).status).toBe(200);
    // Another organization's settings: 403 (not a member), and unknown fields: 422.
    expectErrorBody(
      await call(t.app, 'GET', `/api/organization/${p.orgB.uid}/settings`, { key: admin }),
      403,
      'not_a_member',
    );
    expectErrorBody(await call(t.app, 'PATCH', settings, { key: admin, body: { sod: true } }), 422);
    await call(t.app, 'PATCH', settings, { key: admin, body: { segregation_of_duties: false } });
  });
});

describe('the receivable list finds a client by name and by uid', () => {
  it('keyword matches the client name; client_uid filters', async () => {
    const ar = (query: string) =>
      call(t.app, 'GET', `/api/organization/${p.orgA.uid}/ar-invoices?${query}`, { key: admin });
    const byName = await ar('keyword=quokka');
    expect(byName.body.items.map((i: { uid: string }) => i.uid)).toEqual([receivable]);
    const byUid = await ar(`client_uid=${client}`);
    expect(byUid.body.items.map((i: { uid: string }) => i.uid)).toEqual([receivable]);
    expect((await ar(`client_uid=${crypto.randomUUID()}`)).body.items).toEqual([]);
  });
});

describe('work tasks link only invoices the caller may see', () => {
  it('a member linking a hidden payable gets the same 422 as for an invoice that does not exist', async () => {
    const link = (uid: string) =>
      call(t.app, 'POST', '/api/work-tasks', {
        key: member,
        body: { title: 'Follow up', context_entities: [{ entity_type: 'invoice', entity_uid: uid }] },
      });
    const hidden = await link(unassigned);
    const missing = await link(crypto.randomUUID());
    expectErrorBody(hidden, 422, 'validation_failed');
    expectErrorBody(missing, 422, 'validation_failed');
    expect(hidden.body.errors[0].message.replace(unassigned, 'X')).toBe(
      missing.body.errors[0].message.replace(/invoice \S+/, 'invoice X'),
    );
    expect((await link(assigned)).status).toBe(201);
    // An admin links any invoice of the organization.
    const byAdmin = await call(t.app, 'POST', '/api/work-tasks', {
      key: admin,
      body: { title: 'Check', context_entities: [{ entity_type: 'invoice', entity_uid: unassigned }] },
    });
    expect(byAdmin.status, byAdmin.raw).toBe(201);
  });
});
