/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * The approval-policy routes (docs/approvals.md#the-routes): create, list, read, change and remove, for
 * admins (members read), each refusal, and the checks every route gets. What a policy does to an
 * approval: approval-policy-decisions.test.ts; its deadlines: approval-deadlines.test.ts.
 */

let t: TestApp;
let p: Principals;
let agentUid: string;
let foreignAgentUid: string;
let foreignPolicyUid: string;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const BASE = '/api/approval-policies';

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  agentUid = (await created(p.orgA.admin.key, '/api/agents', { name: 'Payer', status: 'active' })).uid;
  foreignAgentUid = (await created(p.orgB.admin.key, '/api/agents', { name: 'B agent' })).uid;
  foreignPolicyUid = (await created(p.orgB.admin.key, BASE, { name: 'B policy', approver_roles: ['admin'] }))
    .uid;
});
afterAll(async () => t?.close());

async function created(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const create = (body: unknown, key = p.orgA.admin.key) => call(t.app, 'POST', BASE, { key, body });
const get = (uid: string, key = p.orgA.admin.key) => call(t.app, 'GET', `${BASE}/${uid}`, { key });
const patch = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `${BASE}/${uid}`, { key, body });
const remove = (uid: string, key = p.orgA.admin.key) => call(t.app, 'DELETE', `${BASE}/${uid}`, { key });

async function auditOf(uid: string) {
  const res = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
    key: p.orgA.admin.key,
    query: { entity_uid: uid },
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.data.items as any[];
}

describe('POST /api/approval-policies', () => {
  it('201 with the policy: defaults fill in (one approval, initiator allowed, no deadline), audited', async () => {
    const res = await create({ name: '  Admins decide  ', approver_roles: ['admin'] });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201 });
    const policy = res.body.data;
    expect(policy).toEqual({
      uid: expect.any(String),
      organization_uid: p.orgA.uid,
      name: 'Admins decide',
      agent_uid: null,
      tool_type: null,
      min_amount_cents: null,
      approver_roles: ['admin'],
      approver_user_uids: [],
      required_approvals: 1,
      forbid_initiator: false,
      require_rejection_reason: false,
      expires_after_minutes: null,
      escalate_after_minutes: null,
      escalate_to_user_uids: [],
      escalate_to_chat_channel_id: null,
      created_by_uid: p.orgA.admin.userUid,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect((await get(policy.uid)).body.data).toEqual(policy);
    const [event] = await auditOf(policy.uid);
    expect(event).toMatchObject({
      action: 'approval_policy.created',
      entity_type: 'approval_policy',
      actor_user_uid: p.orgA.admin.userUid,
      changes: {
        name: { before: null, after: 'Admins decide' },
        approver_roles: { before: null, after: ['admin'] },
        required_approvals: { before: null, after: 1 },
      },
    });
  });

  it('takes every field: an agent, a tool, a minimum amount, people, the count, expiry and escalation', async () => {
    const body = {
      name: 'Large payments',
      agent_uid: agentUid,
      tool_type: 'payment',
      min_amount_cents: 500_000,
      approver_roles: ['admin', 'member'],
      approver_user_uids: [p.orgA.member.userUid],
      required_approvals: 2,
      forbid_initiator: true,
      expires_after_minutes: 1440,
      escalate_after_minutes: 60,
      escalate_to_user_uids: [p.orgA.admin.userUid],
      escalate_to_chat_channel_id: 'C0FINANCE',
    };
    const policy = await created(p.orgA.admin.key, BASE, body);
    expect(policy).toMatchObject(body);
    // An organization_uid of the caller's own organization is accepted.
    await created(p.orgA.admin.key, BASE, {
      name: 'Named org',
      approver_roles: ['admin'],
      organization_uid: p.orgA.uid,
    });
  });

  it('members may not write policies: 403 forbidden, nothing written', async () => {
    const before = (await call(t.app, 'GET', BASE, { key: p.orgA.admin.key })).body.data._meta.total_items;
    expectErrorBody(
      await create({ name: 'Mine', approver_roles: ['member'] }, p.orgA.member.key),
      403,
      'forbidden',
    );
    const after = (await call(t.app, 'GET', BASE, { key: p.orgA.admin.key })).body.data._meta.total_items;
    expect(after).toBe(before);
  });

  it('422 for each rule a policy breaks, naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ name: 'No one' }, 'approver_roles'],
      [{ name: 'No one', approver_roles: [], approver_user_uids: [] }, 'approver_roles'],
      [{ name: '   ', approver_roles: ['admin'] }, 'name'],
      [{ name: '', approver_roles: ['admin'] }, 'name'],
      [{ name: 'x'.repeat(129), approver_roles: ['admin'] }, 'name'],
      [{ name: 'Owner', approver_roles: ['owner'] }, 'approver_roles.0'],
      [{ name: 'Twice', approver_roles: ['admin', 'admin'] }, 'approver_roles'],
      [{ name: 'Zero', approver_roles: ['admin'], required_approvals: 0 }, 'required_approvals'],
      [{ name: 'Six', approver_roles: ['admin'], required_approvals: 6 }, 'required_approvals'],
      [{ name: 'Quick', approver_roles: ['admin'], expires_after_minutes: 0 }, 'expires_after_minutes'],
      [{ name: 'Slow', approver_roles: ['admin'], expires_after_minutes: 525_601 }, 'expires_after_minutes'],
      [{ name: 'Neg', approver_roles: ['admin'], min_amount_cents: -1 }, 'min_amount_cents'],
      [{ name: 'Frac', approver_roles: ['admin'], min_amount_cents: 1.5 }, 'min_amount_cents'],
      [{ name: 'Extra', approver_roles: ['admin'], owner: 'me' }, 'owner'],
      [
        {
          name: 'Late',
          approver_roles: ['admin'],
          expires_after_minutes: 60,
          escalate_after_minutes: 60,
          escalate_to_user_uids: [p.orgA.admin.userUid],
        },
        'escalate_after_minutes',
      ],
      [
        { name: 'Nobody told', approver_roles: ['admin'], escalate_after_minutes: 30 },
        'escalate_after_minutes',
      ],
      [
        { name: 'When?', approver_roles: ['admin'], escalate_to_user_uids: [p.orgA.admin.userUid] },
        'escalate_to_user_uids',
      ],
      [
        { name: 'When?', approver_roles: ['admin'], escalate_to_chat_channel_id: 'C1' },
        'escalate_to_chat_channel_id',
      ],
      [{ name: 'Foreign agent', approver_roles: ['admin'], agent_uid: foreignAgentUid }, 'agent_uid'],
      [{ name: 'Unknown agent', approver_roles: ['admin'], agent_uid: MISSING }, 'agent_uid'],
      [{ name: 'Stranger', approver_user_uids: [p.orgB.admin.userUid] }, 'approver_user_uids[0]'],
      [
        {
          name: 'Stranger told',
          approver_roles: ['admin'],
          escalate_after_minutes: 5,
          escalate_to_user_uids: [p.orgA.admin.userUid, p.orgB.member.userUid],
        },
        'escalate_to_user_uids[1]',
      ],
      [
        { name: 'Too few', approver_user_uids: [p.orgA.member.userUid], required_approvals: 2 },
        'required_approvals',
      ],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      expectErrorBody(res, 422, 'validation_failed');
      expect(res.body.errors?.[0]?.field, `${JSON.stringify(body)}: ${res.raw}`).toBe(field);
    }
  });

  commonRouteChecks(
    'POST /api/approval-policies',
    {
      method: 'POST',
      url: () => BASE,
      body: () => ({ name: 'Checked', approver_roles: ['admin'] }),
      scope: 'agents:write',
      foreignOrganizationBody: ({ p }) => ({
        name: 'Checked',
        approver_roles: ['admin'],
        organization_uid: p.orgB.uid,
      }),
    },
    () => ({ t, p }),
  );
});

describe('GET /api/approval-policies', () => {
  it('lists the organization’s policies newest first with _meta; members read them; never another organization’s', async () => {
    const first = await created(p.orgA.admin.key, BASE, { name: 'List 1', approver_roles: ['admin'] });
    const second = await created(p.orgA.admin.key, BASE, { name: 'List 2', approver_roles: ['admin'] });
    for (const key of [p.orgA.admin.key, p.orgA.member.key]) {
      const res = await call(t.app, 'GET', BASE, { key, query: { per_page: 2 } });
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data.items.map((i: any) => i.uid)).toEqual([second.uid, first.uid]);
      expect(res.body.data._meta).toMatchObject({ page: 1, per_page: 2 });
      expect(res.body.data._meta.total_items).toBeGreaterThanOrEqual(2);
    }
    const all = await call(t.app, 'GET', BASE, { key: p.orgA.admin.key, query: { per_page: 100 } });
    expect(all.body.data.items.map((i: any) => i.uid)).not.toContain(foreignPolicyUid);
    const page2 = await call(t.app, 'GET', BASE, { key: p.orgA.admin.key, query: { per_page: 1, page: 2 } });
    expect(page2.body.data.items.map((i: any) => i.uid)).toEqual([first.uid]);
  });

  it('400 for per_page out of range or an unknown parameter', async () => {
    expectErrorBody(await call(t.app, 'GET', BASE, { key: p.orgA.admin.key, query: { per_page: 101 } }), 400);
    expectErrorBody(
      await call(t.app, 'GET', BASE, { key: p.orgA.admin.key, query: { agent: 'x' } }),
      400,
      'unknown_parameter',
    );
  });

  commonRouteChecks(
    'GET /api/approval-policies',
    {
      method: 'GET',
      url: () => BASE,
      scope: 'agents:read',
      foreignOrganizationUrl: ({ p }) => `${BASE}?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/approval-policies/{uid}', () => {
  it('a member reads one; unknown and another organization’s are 404; a malformed uid is 400', async () => {
    const policy = await created(p.orgA.admin.key, BASE, { name: 'Readable', approver_roles: ['admin'] });
    const res = await get(policy.uid, p.orgA.member.key);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual(policy);
    expectErrorBody(await get(MISSING), 404, 'not_found');
    expectErrorBody(await get(foreignPolicyUid), 404, 'not_found');
    expectErrorBody(await get('not-a-uuid'), 400, 'invalid_parameter');
  });

  commonRouteChecks(
    'GET /api/approval-policies/{uid}',
    {
      method: 'GET',
      url: async ({ p }) =>
        `${BASE}/${(await created(p.orgA.admin.key, BASE, { name: 'Common', approver_roles: ['admin'] })).uid}`,
      scope: 'agents:read',
      foreignUrl: () => `${BASE}/${foreignPolicyUid}`,
      foreignOrganizationUrl: ({ p }) => `${BASE}/${foreignPolicyUid}?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('PATCH /api/approval-policies/{uid}', () => {
  it('changes only the fields sent; the result is checked as a whole; audited with before and after', async () => {
    const policy = await created(p.orgA.admin.key, BASE, {
      name: 'Editable',
      approver_roles: ['admin'],
      expires_after_minutes: 120,
    });
    const res = await patch(policy.uid, {
      required_approvals: 2,
      approver_user_uids: [p.orgA.member.userUid],
      expires_after_minutes: null,
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      name: 'Editable',
      approver_roles: ['admin'],
      approver_user_uids: [p.orgA.member.userUid],
      required_approvals: 2,
      expires_after_minutes: null,
    });
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(policy.updated_at));
    const events = await auditOf(policy.uid);
    expect(events[0]).toMatchObject({
      action: 'approval_policy.updated',
      changes: {
        required_approvals: { before: 1, after: 2 },
        approver_user_uids: { before: [], after: [p.orgA.member.userUid] },
        expires_after_minutes: { before: 120, after: null },
      },
    });
    expect(Object.keys(events[0].changes).sort()).toEqual([
      'approver_user_uids',
      'expires_after_minutes',
      'required_approvals',
    ]);

    // The same values again: no change, no event.
    const same = await patch(policy.uid, { required_approvals: 2 });
    expect(same.status).toBe(200);
    expect(await auditOf(policy.uid)).toHaveLength(events.length);

    // Leaving no approver, or an escalation after the expiry: 422, nothing changes.
    const none = await patch(policy.uid, { approver_roles: [], approver_user_uids: [] });
    expectErrorBody(none, 422, 'validation_failed');
    const late = await patch(policy.uid, {
      expires_after_minutes: 30,
      escalate_after_minutes: 45,
      escalate_to_chat_channel_id: 'C1',
    });
    expectErrorBody(late, 422, 'validation_failed');
    expect(late.body.errors[0].field).toBe('escalate_after_minutes');
    expect((await get(policy.uid)).body.data).toMatchObject({
      approver_roles: ['admin'],
      expires_after_minutes: null,
    });
  });

  it('an empty body is 422; members 403; unknown and another organization’s 404', async () => {
    const policy = await created(p.orgA.admin.key, BASE, { name: 'Guarded', approver_roles: ['admin'] });
    expectErrorBody(await patch(policy.uid, {}), 422, 'validation_failed');
    expectErrorBody(await patch(policy.uid, { name: 'Mine now' }, p.orgA.member.key), 403, 'forbidden');
    expect((await get(policy.uid)).body.data.name).toBe('Guarded');
    expectErrorBody(await patch(MISSING, { name: 'x' }), 404, 'not_found');
    expectErrorBody(await patch(foreignPolicyUid, { name: 'Taken' }), 404, 'not_found');
    const foreign = await call(t.app, 'GET', `${BASE}/${foreignPolicyUid}`, { key: p.orgB.admin.key });
    expect(foreign.body.data.name).toBe('B policy');
  });

  commonRouteChecks(
    'PATCH /api/approval-policies/{uid}',
    {
      method: 'PATCH',
      url: async ({ p }) =>
        `${BASE}/${(await created(p.orgA.admin.key, BASE, { name: 'Common', approver_roles: ['admin'] })).uid}`,
      body: () => ({ name: 'Renamed' }),
      scope: 'agents:write',
      foreignUrl: () => `${BASE}/${foreignPolicyUid}`,
      foreignOrganizationUrl: ({ p }) => `${BASE}/${foreignPolicyUid}?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('DELETE /api/approval-policies/{uid}', () => {
  it('200 with the policy, then gone; audited; members 403; unknown and another organization’s 404', async () => {
    const policy = await created(p.orgA.admin.key, BASE, { name: 'Doomed', approver_roles: ['member'] });
    expectErrorBody(await remove(policy.uid, p.orgA.member.key), 403, 'forbidden');
    const res = await remove(policy.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual(policy);
    expectErrorBody(await get(policy.uid), 404, 'not_found');
    expectErrorBody(await remove(policy.uid), 404, 'not_found');
    expect((await auditOf(policy.uid))[0]).toMatchObject({
      action: 'approval_policy.deleted',
      changes: { name: { before: 'Doomed', after: null } },
    });
    expectErrorBody(await remove(foreignPolicyUid), 404, 'not_found');
    expect((await call(t.app, 'GET', `${BASE}/${foreignPolicyUid}`, { key: p.orgB.admin.key })).status).toBe(
      200,
    );
  });

  commonRouteChecks(
    'DELETE /api/approval-policies/{uid}',
    {
      method: 'DELETE',
      url: async ({ p }) =>
        `${BASE}/${(await created(p.orgA.admin.key, BASE, { name: 'Common', approver_roles: ['admin'] })).uid}`,
      scope: 'agents:write',
      foreignUrl: () => `${BASE}/${foreignPolicyUid}`,
      foreignOrganizationUrl: ({ p }) => `${BASE}/${foreignPolicyUid}?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});
