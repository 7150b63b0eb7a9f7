import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/modules/api-keys/api-keys.service.ts';
import { addUserToOrganization, initOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { setPasswordByEmail, signIn } from '../helpers/people.ts';

/**
 * Members (docs/people.md#members-and-invitations): the list with last activity, role changes and
 * removal, for admins; the last admin stays; a removed member's keys die on the next request and their
 * open tasks are unassigned with a change-log entry.
 */
let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

const tag = () => crypto.randomBytes(4).toString('hex');
const members = (org: string) => `/api/organization/${org}/members`;
const member = (org: string, user: string) => `${members(org)}/${user}`;

/** An organization of its own (the last-admin rules count its admins), with one admin. */
async function freshOrganization() {
  const email = `founder-${tag()}@fresh.test`;
  const init = await initOrganization(t.db, t.config.apiKeyPepper, {
    organizationName: `Fresh ${tag()}`,
    email,
    fullName: 'Founding Admin',
  });
  return { uid: init.organization_uid, admin: { userUid: init.user_uid, key: init.api_key, email } };
}

async function addUser(org: string, role: 'admin' | 'member', name = 'Added Person') {
  const email = `person-${tag()}@fresh.test`;
  const added = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
    organizationUid: org,
    email,
    fullName: name,
    role,
  });
  return { userUid: added.user_uid, key: added.api_key, email };
}

type MemberItem = { user_uid: string; role: string; last_active_at: string | null; joined_at: string };

async function list(org: string, key: string, query: Record<string, string | number> = {}) {
  const res = await call(t.app, 'GET', members(org), { key, query: { per_page: 100, ...query } });
  expect(res.status, res.raw).toBe(200);
  return res.body.data as { items: MemberItem[]; _meta: Record<string, number> };
}

describe('GET /api/organization/{organization_uid}/members', () => {
  it('lists members first joined first, with role, ids and email', async () => {
    const org = await freshOrganization();
    const person = await addUser(org.uid, 'member', 'Mary Member');
    const { items, _meta } = await list(org.uid, org.admin.key);
    expect(_meta).toEqual({ page: 1, per_page: 100, total_pages: 1, total_items: 2 });
    expect(items.map((m) => m.user_uid)).toEqual([org.admin.userUid, person.userUid]);
    expect(items[1]).toEqual({
      user_uid: person.userUid,
      user_id: expect.any(Number),
      email: person.email,
      full_name: 'Mary Member',
      avatar_url: null,
      role: 'member',
      joined_at: expect.any(String),
      last_active_at: null,
    });
    expect((await list(org.uid, org.admin.key, { role: 'admin' })).items.map((m) => m.user_uid)).toEqual([
      org.admin.userUid,
    ]);
    const page = await list(org.uid, org.admin.key, { per_page: 1, page: 2 });
    expect(page.items.map((m) => m.user_uid)).toEqual([person.userUid]);
    expect(page._meta).toMatchObject({ total_pages: 2, total_items: 2 });
  });

  it('last_active_at: the latest of their keys here and their sign-in sessions', async () => {
    const org = await freshOrganization();
    const person = await addUser(org.uid, 'member');
    await t.db.execute(
      sql`update api_keys set last_used_at = '2030-01-02T03:04:05Z' where user_uid = ${person.userUid}`,
    );
    const activity = async () =>
      (await list(org.uid, org.admin.key)).items.find((m) => m.user_uid === person.userUid)!.last_active_at;
    expect(await activity()).toBe('2030-01-02T03:04:05.000Z');
    // A later session wins; an older one does not.
    for (const seen of ['2029-12-31T00:00:00Z', '2030-02-01T00:00:00Z']) {
      await t.db.execute(
        sql`insert into user_sessions (user_uid, token_hash, last_seen_at, expires_at, method)
            values (${person.userUid}, ${crypto.randomUUID()}, ${seen}, ${seen}::timestamptz + interval '1 day', 'password')`,
      );
    }
    expect(await activity()).toBe('2030-02-01T00:00:00.000Z');
    // A key of another organization does not show here.
    const elsewhere = await freshOrganization();
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: elsewhere.uid,
      email: person.email,
      role: 'member',
    });
    await t.db.execute(
      sql`update api_keys set last_used_at = '2031-01-01T00:00:00Z' where user_uid = ${person.userUid} and organization_uid = ${elsewhere.uid}`,
    );
    expect(await activity()).toBe('2030-02-01T00:00:00.000Z');
  });

  it('403 for a member; 400 for an unknown parameter or role', async () => {
    expectErrorBody(await call(t.app, 'GET', members(p.orgA.uid), { key: p.orgA.member.key }), 403);
    expectErrorBody(
      await call(t.app, 'GET', members(p.orgA.uid), { key: p.orgA.admin.key, query: { role: 'owner' } }),
      400,
      'invalid_parameter',
    );
    expectErrorBody(
      await call(t.app, 'GET', members(p.orgA.uid), { key: p.orgA.admin.key, query: { q: 'x' } }),
      400,
      'unknown_parameter',
    );
  });
});

describe('PATCH /api/organization/{organization_uid}/members/{user_uid}', () => {
  it('changes the role; the member acts with it on the next request', async () => {
    const org = await freshOrganization();
    const person = await addUser(org.uid, 'member');
    expectErrorBody(await call(t.app, 'GET', members(org.uid), { key: person.key }), 403);
    const res = await call(t.app, 'PATCH', member(org.uid, person.userUid), {
      key: org.admin.key,
      body: { role: 'admin' },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      message: 'Member updated',
      data: { user_uid: person.userUid, role: 'admin' },
    });
    expect((await call(t.app, 'GET', members(org.uid), { key: person.key })).status).toBe(200);
    const same = await call(t.app, 'PATCH', member(org.uid, person.userUid), {
      key: org.admin.key,
      body: { role: 'admin' },
    });
    expect(same.body.data.role).toBe('admin');
    // Now two admins: the founder may step down.
    const down = await call(t.app, 'PATCH', member(org.uid, org.admin.userUid), {
      key: org.admin.key,
      body: { role: 'member' },
    });
    expect(down.body.data.role).toBe('member');
    expectErrorBody(await call(t.app, 'GET', members(org.uid), { key: org.admin.key }), 403);
  });

  it('409 demoting the last admin, themselves or by another admin’s hand', async () => {
    const org = await freshOrganization();
    const res = expectErrorBody(
      await call(t.app, 'PATCH', member(org.uid, org.admin.userUid), {
        key: org.admin.key,
        body: { role: 'member' },
      }),
      409,
      'invalid_state',
    );
    expect(res.message).toContain('last admin');
    const [row] = await rawQuery<{ role: string }>(
      t.db,
      `select role from memberships where organization_uid = $1 and user_uid = $2`,
      [org.uid, org.admin.userUid],
    );
    expect(row!.role).toBe('admin');
  });

  it('two admins demoting each other at once: exactly one succeeds, one admin remains', async () => {
    for (let round = 0; round < 3; round++) {
      const org = await freshOrganization();
      const second = await addUser(org.uid, 'admin');
      const results = await Promise.all([
        call(t.app, 'PATCH', member(org.uid, second.userUid), {
          key: org.admin.key,
          body: { role: 'member' },
        }),
        call(t.app, 'PATCH', member(org.uid, org.admin.userUid), {
          key: second.key,
          body: { role: 'member' },
        }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      const admins = await rawQuery<{ user_uid: string }>(
        t.db,
        `select user_uid from memberships where organization_uid = $1 and role = 'admin'`,
        [org.uid],
      );
      expect(admins).toHaveLength(1);
    }
  });

  it('a demotion and a removal of the last two admins at once: one admin remains', async () => {
    const org = await freshOrganization();
    const second = await addUser(org.uid, 'admin');
    const results = await Promise.all([
      call(t.app, 'DELETE', member(org.uid, second.userUid), { key: org.admin.key }),
      call(t.app, 'PATCH', member(org.uid, org.admin.userUid), { key: second.key, body: { role: 'member' } }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const [admins] = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from memberships where organization_uid = $1 and role = 'admin'`,
      [org.uid],
    );
    expect(admins!.n).toBe(1);
  });

  it('404 for a user who is not a member here (another organization’s, or none); 422 for a bad role', async () => {
    const org = await freshOrganization();
    for (const user of [p.orgB.member.userUid, crypto.randomUUID()]) {
      expectErrorBody(
        await call(t.app, 'PATCH', member(org.uid, user), { key: org.admin.key, body: { role: 'admin' } }),
        404,
        'not_found',
      );
    }
    for (const body of [{ role: 'owner' }, {}, { role: 'admin', email: 'x@y.z' }]) {
      expectErrorBody(
        await call(t.app, 'PATCH', member(org.uid, org.admin.userUid), { key: org.admin.key, body }),
        422,
        'validation_failed',
      );
    }
  });

  it('403 for a member, who cannot promote themselves', async () => {
    expectErrorBody(
      await call(t.app, 'PATCH', member(p.orgA.uid, p.orgA.member.userUid), {
        key: p.orgA.member.key,
        body: { role: 'admin' },
      }),
      403,
    );
  });
});

describe('DELETE /api/organization/{organization_uid}/members/{user_uid}', () => {
  it("keeps the person's default organization where it is across removal and re-adding; the last removal ends their sessions", async () => {
    const first = await freshOrganization();
    const second = await freshOrganization();
    const person = await addUser(first.uid, 'member');
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: second.uid,
      email: person.email,
      role: 'member',
    });
    const password = 'a long enough password 42';
    await setPasswordByEmail(t, person.email, password);
    const browser = await signIn(t, person.email, password);
    const me = async () => {
      const res = await browser.call('GET', '/api/me');
      expect(res.status, res.raw).toBe(200);
      return res.body.data as {
        default_organization_uid: string;
        memberships: { organization_uid: string; is_default: boolean }[];
      };
    };
    expect((await me()).default_organization_uid).toBe(first.uid);

    // Removed from the default one: the other becomes the default, said so on the membership itself.
    expect(
      (await call(t.app, 'DELETE', member(first.uid, person.userUid), { key: first.admin.key })).status,
    ).toBe(200);
    expect(await me()).toMatchObject({
      default_organization_uid: second.uid,
      memberships: [{ organization_uid: second.uid, is_default: true }],
    });
    // Joining again adds a membership and leaves the default as it is.
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: first.uid,
      email: person.email,
      role: 'member',
    });
    const back = await me();
    expect(back.default_organization_uid).toBe(second.uid);
    expect(back.memberships.find((m) => m.organization_uid === first.uid)?.is_default).toBe(false);

    // Removed from one of two: the session goes on; from the last: every session of theirs ends.
    expect(
      (await call(t.app, 'DELETE', member(second.uid, person.userUid), { key: second.admin.key })).status,
    ).toBe(200);
    expect((await me()).default_organization_uid).toBe(first.uid);
    expect(
      (await call(t.app, 'DELETE', member(first.uid, person.userUid), { key: first.admin.key })).status,
    ).toBe(200);
    expectErrorBody(await browser.call('GET', '/api/me'), 401, 'unauthorized');
  });

  it('removes the member: their keys here die at once, their open tasks are unassigned with a log entry', async () => {
    const org = await freshOrganization();
    const person = await addUser(org.uid, 'member', 'Leaving Person');
    const { key: secondKey } = await issueApiKey(t.db, t.config.apiKeyPepper, {
      organizationUid: org.uid,
      userUid: person.userUid,
      name: 'second',
      scopes: ['work_tasks:read'],
    });
    const task = async (status: string) => {
      const res = await call(t.app, 'POST', '/api/work-tasks', {
        key: org.admin.key,
        body: { title: `Task ${status}`, status, assign_to: { type: 'user', user_uid: person.userUid } },
      });
      expect(res.status, res.raw).toBe(201);
      return res.body.data.uid as string;
    };
    const open = await task('in_progress');
    const done = await task('done');
    expect((await call(t.app, 'GET', '/api/me', { key: person.key })).status).toBe(200);
    expect((await call(t.app, 'GET', '/api/me', { key: secondKey })).status).toBe(200);

    const res = await call(t.app, 'DELETE', member(org.uid, person.userUid), { key: org.admin.key });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      message: 'Member removed',
      data: {
        user_uid: person.userUid,
        email: person.email,
        role: 'member',
        revoked_api_keys: 2,
        unassigned_work_tasks: 1,
      },
    });
    expectErrorBody(await call(t.app, 'GET', '/api/me', { key: person.key }), 401, 'unauthorized');
    expectErrorBody(await call(t.app, 'GET', '/api/me', { key: secondKey }), 401, 'unauthorized');
    const revoked = await rawQuery<{ revoked_at: Date | null }>(
      t.db,
      `select revoked_at from api_keys where user_uid = $1 and organization_uid = $2`,
      [person.userUid, org.uid],
    );
    expect(revoked.every((k) => k.revoked_at !== null)).toBe(true);

    const openTask = (await call(t.app, 'GET', `/api/work-tasks/${open}`, { key: org.admin.key })).body.data;
    expect(openTask.assign_to).toBeNull();
    expect(openTask.change_log.at(-1)).toMatchObject({
      by_type: 'user',
      by_name: 'Founding Admin',
      action: 'unassigned',
      details: { from: { type: 'user', user_uid: person.userUid }, to: null, reason: 'member_removed' },
    });
    const doneTask = (await call(t.app, 'GET', `/api/work-tasks/${done}`, { key: org.admin.key })).body.data;
    expect(doneTask.assign_to).toMatchObject({ user_uid: person.userUid });

    expect((await list(org.uid, org.admin.key)).items.map((m) => m.user_uid)).toEqual([org.admin.userUid]);
    expectErrorBody(
      await call(t.app, 'DELETE', member(org.uid, person.userUid), { key: org.admin.key }),
      404,
    );
  });

  it('a member of two organizations keeps the other one and its keys', async () => {
    const org = await freshOrganization();
    const other = await freshOrganization();
    const person = await addUser(org.uid, 'member');
    const { api_key: otherKey } = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: other.uid,
      email: person.email,
      role: 'member',
    });
    // The key made in `other` acts in `org` too while the membership lasts.
    expect(
      (await call(t.app, 'GET', '/api/work-tasks', { key: otherKey, query: { organization_uid: org.uid } }))
        .status,
    ).toBe(200);
    const res = await call(t.app, 'DELETE', member(org.uid, person.userUid), { key: org.admin.key });
    expect(res.body.data.revoked_api_keys).toBe(1);
    expectErrorBody(await call(t.app, 'GET', '/api/me', { key: person.key }), 401);
    const me = await call(t.app, 'GET', '/api/me', { key: otherKey });
    expect(me.status).toBe(200);
    expect(me.body.data.memberships.map((m: { organization_uid: string }) => m.organization_uid)).toEqual([
      other.uid,
    ]);
    // …and no longer in `org`: the remembered memberships were dropped (users.auth_version).
    expectErrorBody(
      await call(t.app, 'GET', '/api/work-tasks', { key: otherKey, query: { organization_uid: org.uid } }),
      403,
      'not_a_member',
    );
  });

  it('409 removing the last admin (also oneself); an admin may leave while another remains', async () => {
    const org = await freshOrganization();
    expectErrorBody(
      await call(t.app, 'DELETE', member(org.uid, org.admin.userUid), { key: org.admin.key }),
      409,
      'invalid_state',
    );
    const second = await addUser(org.uid, 'admin');
    const leave = await call(t.app, 'DELETE', member(org.uid, org.admin.userUid), { key: org.admin.key });
    expect(leave.status, leave.raw).toBe(200);
    expectErrorBody(await call(t.app, 'GET', '/api/me', { key: org.admin.key }), 401);
    expectErrorBody(
      await call(t.app, 'DELETE', member(org.uid, second.userUid), { key: second.key }),
      409,
      'invalid_state',
    );
  });

  it('403 for a member; 404 for another organization’s user', async () => {
    expectErrorBody(
      await call(t.app, 'DELETE', member(p.orgA.uid, p.orgA.admin.userUid), { key: p.orgA.member.key }),
      403,
    );
    expectErrorBody(
      await call(t.app, 'DELETE', member(p.orgA.uid, p.orgB.member.userUid), { key: p.orgA.admin.key }),
      404,
      'not_found',
    );
  });
});

describe('authentication refuses a key whose organization is no longer its user’s', () => {
  it('even when the key itself was never revoked', async () => {
    const org = await freshOrganization();
    const person = await addUser(org.uid, 'member');
    expect((await call(t.app, 'GET', '/api/me', { key: person.key })).status).toBe(200);
    await t.db.execute(
      sql`delete from memberships where organization_uid = ${org.uid} and user_uid = ${person.userUid}`,
    );
    expectErrorBody(await call(t.app, 'GET', '/api/me', { key: person.key }), 401, 'unauthorized');
  });
});

describe('common route checks', () => {
  const env = () => ({ t, p });
  commonRouteChecks(
    'GET members',
    {
      method: 'GET',
      url: () => members(p.orgA.uid),
      scope: 'members:read',
      foreignOrganizationUrl: () => members(p.orgB.uid),
    },
    env,
  );
  commonRouteChecks(
    'PATCH members/{user_uid}',
    {
      method: 'PATCH',
      url: () => member(p.orgA.uid, p.orgA.member.userUid),
      body: () => ({ role: 'member' }),
      scope: 'members:write',
      foreignUrl: () => member(p.orgA.uid, p.orgB.member.userUid),
      foreignOrganizationUrl: () => member(p.orgB.uid, p.orgB.member.userUid),
    },
    env,
  );
  commonRouteChecks(
    'DELETE members/{user_uid}',
    {
      method: 'DELETE',
      url: () => member(p.orgA.uid, crypto.randomUUID()),
      scope: 'members:write',
      foreignUrl: () => member(p.orgA.uid, p.orgB.member.userUid),
      foreignOrganizationUrl: () => member(p.orgB.uid, p.orgB.member.userUid),
    },
    env,
  );
});
