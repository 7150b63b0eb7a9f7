import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { FakeSlack } from '../helpers/fake-slack.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { setPasswordByEmail, signIn } from '../helpers/people.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * GET/PATCH /api/organization/{uid}/settings: the two switches (their effects are tested where they act:
 * invoice-access.test.ts, sign-in.test.ts) and the organization's default Slack channel, checked with a
 * local fake Slack exactly as an agent's channel is (agents.test.ts); `slack_configured` from the
 * deployment's configuration. Where the channel is used: notifications.test.ts.
 */

let t: TestApp;
let p: Principals;
let slack: FakeSlack;
const MEMBER = 'C0ORGDEFAULT';
const MEMBER2 = 'C0ORGOTHER';
const NOT_MEMBER = 'C0ORGNOTIN';
const ARCHIVED = 'C0ORGOLD';

const url = (org = p.orgA.uid) => `/api/organization/${org}/settings`;
const patch = (body: unknown, key = p.orgA.admin.key, app = t.app) =>
  call(app, 'PATCH', url(), { key, body });
const read = (key = p.orgA.admin.key) => call(t.app, 'GET', url(), { key });
const asked = () => slack.requestsFor('conversations.info').length;

beforeAll(async () => {
  slack = await new FakeSlack().start();
  slack.channel(MEMBER, true);
  slack.channel(MEMBER2, true);
  slack.channel(NOT_MEMBER, false);
  slack.channel(ARCHIVED, true, true);
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000', ...slack.env() } });
  p = await createPrincipals(t);
});
afterAll(async () => {
  await t?.close();
  await slack?.close();
});

describe('GET /api/organization/{uid}/settings', () => {
  it('every field, for an admin and a member alike; no channel and Slack configured at first', async () => {
    // Organizations of its own: the other tests change orgA's settings, in any order.
    const fresh = await createPrincipals(t);
    for (const key of [fresh.orgA.admin.key, fresh.orgA.member.key]) {
      const res = await call(t.app, 'GET', `/api/organization/${fresh.orgA.uid}/settings`, { key });
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data).toEqual({
        organization_uid: fresh.orgA.uid,
        segregation_of_duties: false,
        require_admin_mfa: false,
        slack_channel_id: null,
        slack_configured: true,
        approval_limits: { roles: { admin: null, member: null }, users: [] },
        address: '',
        tax_id: null,
        payment_instructions: '',
        search_language: 'english',
        updated_at: expect.any(String),
      });
    }
  });
});

describe('what invoice documents show (address, tax_id, payment_instructions)', () => {
  it('stored trimmed, an empty tax id is none, audited; over-long → 422 and nothing changes', async () => {
    const res = await patch({
      address: '  1 Harbour Street\nPortsmouth  ',
      tax_id: ' GB123456789 ',
      payment_instructions: ' IBAN GB29 NWBK 6016 1331 9268 19 ',
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      address: '1 Harbour Street\nPortsmouth',
      tax_id: 'GB123456789',
      payment_instructions: 'IBAN GB29 NWBK 6016 1331 9268 19',
    });
    expect((await patch({ tax_id: '' })).body.data.tax_id).toBeNull();
    for (const body of [
      { address: 'x'.repeat(501) },
      { tax_id: 'x'.repeat(65) },
      { payment_instructions: 'x'.repeat(2001) },
    ]) {
      expectErrorBody(await patch(body), 422, 'validation_failed');
    }
    expect((await read()).body.data).toMatchObject({ address: '1 Harbour Street\nPortsmouth', tax_id: null });
    const events = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
      key: p.orgA.admin.key,
      query: { action: 'organization.settings_changed' },
    });
    expect(events.body.data.items[0].changes).toEqual({ tax_id: { before: 'GB123456789', after: null } });
    expectErrorBody(await patch({ address: 'Elsewhere' }, p.orgA.member.key), 403, 'missing_scope');
  });
});

describe('the default Slack channel (PATCH slack_channel_id)', () => {
  it('a channel the bot is in: asked of Slack with our token, stored, answered, read back; the switches stay', async () => {
    // From no channel and both switches off, whatever the tests before this one left.
    expect(
      (await patch({ slack_channel_id: null, segregation_of_duties: false, require_admin_mfa: false }))
        .status,
    ).toBe(200);
    const before = asked();
    const res = await patch({ slack_channel_id: MEMBER });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      slack_channel_id: MEMBER,
      slack_configured: true,
      segregation_of_duties: false,
      require_admin_mfa: false,
    });
    const checks = slack.requestsFor('conversations.info').slice(before);
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ token: slack.token, params: { channel: MEMBER } });
    expect((await read(p.orgA.member.key)).body.data.slack_channel_id).toBe(MEMBER);
  });

  it('the same channel again, or only a switch: Slack is not asked', async () => {
    await patch({ slack_channel_id: MEMBER });
    const before = asked();
    expect((await patch({ slack_channel_id: MEMBER })).status).toBe(200);
    const switched = await patch({ segregation_of_duties: true });
    expect(switched.body.data).toMatchObject({ segregation_of_duties: true, slack_channel_id: MEMBER });
    expect(asked()).toBe(before);
    await patch({ segregation_of_duties: false });
  });

  it('not a member, unknown, archived → 422 naming slack_channel_id, and the channel stays', async () => {
    await patch({ slack_channel_id: MEMBER });
    const cases = [
      [NOT_MEMBER, /not a member of channel/],
      ['C0NOPE', /does not exist/],
      [ARCHIVED, /archived/],
    ] as const;
    for (const [channel, says] of cases) {
      const res = await patch({ slack_channel_id: channel });
      expectErrorBody(res, 422, 'validation_failed');
      expect(res.body.errors).toEqual([{ field: 'slack_channel_id', message: expect.stringMatching(says) }]);
    }
    expect((await read()).body.data.slack_channel_id).toBe(MEMBER);
  });

  it('Slack down (HTTP 500), refusing our token, or timing out → 502/504 and nothing changes', async () => {
    await patch({ slack_channel_id: MEMBER });
    try {
      slack.infoBehaviour = { kind: 'http', status: 500 };
      expectErrorBody(await patch({ slack_channel_id: MEMBER2 }), 502, 'bad_gateway');
      slack.infoBehaviour = { kind: 'fail', error: 'invalid_auth' };
      const refused = expectErrorBody(await patch({ slack_channel_id: MEMBER2 }), 502, 'bad_gateway');
      expect(refused.message).toContain('invalid_auth');
      // An instance over the same database whose Slack timeout is short, so the hang ends soon.
      const impatient = await secondInstance(t, {
        config: { chat: { ...t.config.chat, timeoutMs: 300 } as typeof t.config.chat },
      });
      try {
        slack.infoBehaviour = { kind: 'hang' };
        const timedOut = await patch({ slack_channel_id: MEMBER2 }, p.orgA.admin.key, impatient.app);
        expectErrorBody(timedOut, 504, 'gateway_timeout');
      } finally {
        await impatient.close();
      }
    } finally {
      slack.reset();
    }
    expect((await read()).body.data.slack_channel_id).toBe(MEMBER);
  });

  it('another channel the bot is in replaces it; null clears it without asking Slack', async () => {
    await patch({ slack_channel_id: MEMBER });
    expect((await patch({ slack_channel_id: MEMBER2 })).body.data.slack_channel_id).toBe(MEMBER2);
    const before = asked();
    const cleared = await patch({ slack_channel_id: null });
    expect(cleared.status, cleared.raw).toBe(200);
    expect(cleared.body.data.slack_channel_id).toBeNull();
    expect(asked()).toBe(before);
  });

  it('an empty, over-long or non-string channel, or an unknown field → 422; nothing changes', async () => {
    await patch({ slack_channel_id: MEMBER });
    for (const body of [
      { slack_channel_id: '' },
      { slack_channel_id: 'C'.repeat(256) },
      { slack_channel_id: 42 },
      { slack_channel: MEMBER2 },
    ]) {
      expectErrorBody(await patch(body), 422, 'validation_failed');
    }
    expect((await read()).body.data.slack_channel_id).toBe(MEMBER);
  });

  it('the change is audited with who made it', async () => {
    await patch({ slack_channel_id: null });
    await patch({ slack_channel_id: MEMBER2 });
    const res = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
      key: p.orgA.admin.key,
      query: { action: 'organization.settings_changed' },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.items[0]).toMatchObject({
      action: 'organization.settings_changed',
      changes: { slack_channel_id: { before: null, after: MEMBER2 } },
      actor_user_uid: p.orgA.admin.userUid,
    });
  });
});

describe('who may change it', () => {
  it('a member: 403 missing_scope (organization:write is an admin-only scope), before Slack is asked; the channel stays', async () => {
    await patch({ slack_channel_id: MEMBER });
    const before = asked();
    for (const body of [
      { slack_channel_id: MEMBER2 },
      { slack_channel_id: null },
      { segregation_of_duties: true },
    ]) {
      const refused = expectErrorBody(await patch(body, p.orgA.member.key), 403, 'missing_scope');
      expect(refused.message).toBe('Your role (member) does not allow organization:write');
    }
    expect(asked()).toBe(before);
    expect((await read()).body.data).toMatchObject({
      slack_channel_id: MEMBER,
      segregation_of_duties: false,
    });
  });

  it("another organization's settings: 403 not_a_member to read or change, and it is untouched", async () => {
    expectErrorBody(
      await call(t.app, 'GET', url(p.orgB.uid), { key: p.orgA.admin.key }),
      403,
      'not_a_member',
    );
    const before = asked();
    expectErrorBody(
      await call(t.app, 'PATCH', url(p.orgB.uid), {
        key: p.orgA.admin.key,
        body: { slack_channel_id: MEMBER },
      }),
      403,
      'not_a_member',
    );
    expect(asked()).toBe(before);
    const theirs = await call(t.app, 'GET', url(p.orgB.uid), { key: p.orgB.member.key });
    expect(theirs.body.data.slack_channel_id).toBeNull();
  });

  it('an unknown organization uid: 403 not_a_member (the same answer: nothing is revealed)', async () => {
    expectErrorBody(
      await call(t.app, 'GET', url('00000000-0000-4000-8000-000000000000'), { key: p.orgA.admin.key }),
      403,
      'not_a_member',
    );
    expectErrorBody(await call(t.app, 'GET', url('not-a-uuid'), { key: p.orgA.admin.key }), 400);
  });
});

describe('API key scopes: organization:read and organization:write', () => {
  it('a key with only invoices:read (or every scope but these two): 403 missing_scope to read or change, nothing changes', async () => {
    await patch({ slack_channel_id: MEMBER, segregation_of_duties: false });
    const before = asked();
    for (const key of [
      await p.keyWithScopes(['invoices:read']),
      await p.keyWithScopes([
        'invoices:read',
        'invoices:write',
        'members:write',
        'webhooks:write',
        'audit:read',
      ]),
    ]) {
      const reading = expectErrorBody(await read(key), 403, 'missing_scope');
      expect(reading.message).toBe('This API key lacks the organization:read scope');
      for (const body of [
        { segregation_of_duties: true },
        { require_admin_mfa: true },
        { slack_channel_id: null },
      ]) {
        const changing = expectErrorBody(await patch(body, key), 403, 'missing_scope');
        expect(changing.message).toBe('This API key lacks the organization:write scope');
      }
    }
    expect(asked()).toBe(before);
    expect((await read()).body.data).toMatchObject({
      slack_channel_id: MEMBER,
      segregation_of_duties: false,
      require_admin_mfa: false,
    });
  });

  it("organization:read reads (an admin's key and a member's) but does not change", async () => {
    for (const who of ['admin', 'member'] as const) {
      const key = await p.keyWithScopes(['organization:read'], who);
      const res = await read(key);
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data.organization_uid).toBe(p.orgA.uid);
      expectErrorBody(await patch({ segregation_of_duties: true }, key), 403, 'missing_scope');
    }
    expect((await read()).body.data.segregation_of_duties).toBe(false);
  });

  it("organization:write changes (an admin's key) but does not read; read and write together do both", async () => {
    const writer = await p.keyWithScopes(['organization:write']);
    const changed = await patch({ segregation_of_duties: true }, writer);
    expect(changed.status, changed.raw).toBe(200);
    expect(changed.body.data.segregation_of_duties).toBe(true);
    expectErrorBody(await read(writer), 403, 'missing_scope');
    const both = await p.keyWithScopes(['organization:read', 'organization:write']);
    expect((await patch({ segregation_of_duties: false }, both)).body.data.segregation_of_duties).toBe(false);
    expect((await read(both)).body.data.segregation_of_duties).toBe(false);
  });

  it('a member cannot be given organization:write: refused when the key is made, and by the role anyway', async () => {
    const memberKey = await p.keyWithScopes(['organization:read'], 'member');
    expectErrorBody(
      await call(t.app, 'POST', '/api/api-keys', {
        key: p.orgA.member.key,
        body: { name: 'settings', scopes: ['organization:write'] },
      }),
      403,
      'forbidden',
    );
    // A key that holds it anyway (issued past the route's check) still meets the member's role.
    const key = await p.keyWithScopes(['organization:write'], 'member');
    const refused = expectErrorBody(await patch({ segregation_of_duties: true }, key), 403, 'missing_scope');
    expect(refused.message).toBe('Your role (member) does not allow organization:write');
    expect((await read(memberKey)).body.data.segregation_of_duties).toBe(false);
  });

  it('full-access keys (no scopes, as every key made before these scopes existed) keep both, within the role', async () => {
    // The admin's and member's first keys are full-access keys.
    expect((await read(p.orgA.admin.key)).status).toBe(200);
    expect((await read(p.orgA.member.key)).status).toBe(200);
    expect((await patch({ segregation_of_duties: false }, p.orgA.admin.key)).status).toBe(200);
    expectErrorBody(await patch({ segregation_of_duties: false }, p.orgA.member.key), 403, 'missing_scope');
  });

  it('sessions (the console) are not limited by scopes: an admin reads and changes, a member only reads', async () => {
    const password = 'correct horse battery staple';
    await setPasswordByEmail(t, p.orgA.admin.email, password);
    await setPasswordByEmail(t, p.orgA.member.email, password);
    const admin = await signIn(t, p.orgA.admin.email, password);
    const member = await signIn(t, p.orgA.member.email, password);
    expect((await admin.call('GET', url())).status).toBe(200);
    const changed = await admin.call('PATCH', url(), { body: { segregation_of_duties: true } });
    expect(changed.status, changed.raw).toBe(200);
    expect((await member.call('GET', url())).body.data.segregation_of_duties).toBe(true);
    expectErrorBody(
      await member.call('PATCH', url(), { body: { segregation_of_duties: false } }),
      403,
      'missing_scope',
    );
    await admin.call('PATCH', url(), { body: { segregation_of_duties: false } });
  });
});

describe('without SLACK_BOT_TOKEN', () => {
  let plain: TestApp;
  let key: string;
  let org: string;
  beforeAll(async () => {
    plain = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
    const principals = await createPrincipals(plain);
    key = principals.orgA.admin.key;
    org = principals.orgA.uid;
  });
  afterAll(async () => plain?.close());

  it('slack_configured is false and any channel is stored unchecked', async () => {
    const before = slack.requests.length;
    const res = await call(plain.app, 'PATCH', `/api/organization/${org}/settings`, {
      key,
      body: { slack_channel_id: NOT_MEMBER },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({ slack_channel_id: NOT_MEMBER, slack_configured: false });
    const read = await call(plain.app, 'GET', `/api/organization/${org}/settings`, { key });
    expect(read.body.data).toMatchObject({ slack_channel_id: NOT_MEMBER, slack_configured: false });
    expect(slack.requests.length).toBe(before);
  });
});

for (const method of ['GET', 'PATCH'] as const) {
  commonRouteChecks(
    `${method} /api/organization/{uid}/settings`,
    {
      method,
      scope: method === 'GET' ? 'organization:read' : 'organization:write',
      url: () => url(),
      ...(method === 'PATCH' ? { body: () => ({ slack_channel_id: null }) } : {}),
      foreignOrganizationUrl: () => url(p.orgB.uid),
    },
    () => ({ t, p }),
  );
}
