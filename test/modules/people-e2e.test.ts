import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { emailedToken, signIn } from '../helpers/people.ts';

/**
 * Issue 18's whole path, as people would walk it: the first admin invites a teammate by email, the
 * teammate accepts from the link in the outbox, signs in with a cookie session, makes a key, is demoted
 * and removed — and the key stops working on the next request. Every step is in the audit log.
 */
let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

describe('a teammate from invitation to removal', () => {
  it('invite → accept → sign in → key → demote → remove → key refused; all audited', async () => {
    const org = p.orgA.uid;
    const admin = p.orgA.admin.key;
    const email = `teammate-${Date.now()}@acme.test`;
    const password = 'a long enough passphrase';

    const invited = await call(t.app, 'POST', `/api/organization/${org}/invitations`, {
      key: admin,
      body: { email, role: 'admin' },
    });
    expect(invited.status, invited.raw).toBe(201);
    expect(invited.raw).not.toMatch(/token/i);

    const token = emailedToken(t, email, '/accept-invitation');
    const preview = await call(t.app, 'GET', `/api/invitations/${token}`);
    expect(preview.status, preview.raw).toBe(200);
    const accepted = await call(t.app, 'POST', '/api/invitations/accept', {
      body: { token, full_name: 'Tea Mate', password },
    });
    expect(accepted.status, accepted.raw).toBe(200);
    const userUid = accepted.body.data.user_uid as string;
    // The link works once.
    expect(
      (await call(t.app, 'POST', '/api/invitations/accept', { body: { token, full_name: 'X', password } }))
        .status,
    ).toBeGreaterThanOrEqual(400);

    const browser = await signIn(t, email, password);
    const me = await browser.call('GET', '/api/me');
    expect(me.body.data.memberships).toEqual([
      expect.objectContaining({ organization_uid: org, role: 'admin' }),
    ]);
    const created = await browser.call('POST', '/api/api-keys', { body: { name: 'my laptop' } });
    expect(created.status, created.raw).toBe(200);
    const key = created.body.data.key as string;
    expect((await call(t.app, 'GET', '/api/parties', { key })).status).toBe(200);

    const demoted = await call(t.app, 'PATCH', `/api/organization/${org}/members/${userUid}`, {
      key: admin,
      body: { role: 'member' },
    });
    expect(demoted.status, demoted.raw).toBe(200);
    // The demotion holds from the next request, for the key and the session alike.
    expectErrorBody(await call(t.app, 'GET', `/api/organization/${org}/members`, { key }), 403);
    expectErrorBody(await browser.call('GET', `/api/organization/${org}/members`), 403);

    const removed = await call(t.app, 'DELETE', `/api/organization/${org}/members/${userUid}`, {
      key: admin,
    });
    expect(removed.status, removed.raw).toBe(200);
    expect(removed.body.data.revoked_api_keys).toBe(1);
    expectErrorBody(await call(t.app, 'GET', '/api/parties', { key }), 401);
    // It was their only organization: their sessions end too (one of a person who belongs elsewhere
    // lives on: members.test.ts).
    expectErrorBody(await browser.call('GET', '/api/parties', { query: { organization_uid: org } }), 401);

    const audit = await call(t.app, 'GET', `/api/organization/${org}/audit-events`, {
      key: admin,
      query: { per_page: 100 },
    });
    expect(audit.status, audit.raw).toBe(200);
    const events = (
      audit.body.data.items as {
        action: string;
        entity_uid: string;
        actor_type: string;
        actor_uid: string | null;
      }[]
    )
      .filter(
        (e) =>
          e.entity_uid === userUid ||
          e.entity_uid === invited.body.data.uid ||
          e.entity_uid === created.body.data.uid,
      )
      .map((e) => `${e.action} by ${e.actor_type}`)
      .reverse();
    expect(events).toEqual([
      'invitation.created by api_key',
      'invitation.accepted by user',
      'member.added by user',
      'api_key.created by user',
      'member.role_changed by api_key',
      'member.removed by api_key',
    ]);
    // Nothing in the log is a secret: no token, no password, no key.
    expect(audit.raw).not.toContain(token);
    expect(audit.raw).not.toContain(password);
    expect(audit.raw).not.toContain(key);
  });
});
