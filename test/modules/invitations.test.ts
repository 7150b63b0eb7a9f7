import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/modules/people/passwords.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { MemoryRateLimiter } from '../../src/platform/http/rate-limit.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { FakeSmtp } from '../helpers/fake-smtp.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * Invitations (docs/people.md#members-and-invitations): an admin invites by email, resends, revokes;
 * whoever holds the emailed link looks at it and accepts it, as a new user or signed in as the invited
 * existing one. The mail goes to a real local SMTP server (SMTP_URL), where the link is read back.
 */
let t: TestApp;
let p: Principals;
let smtp: FakeSmtp;
const logLines: string[] = [];
const BASE = 'https://remit.example.test';
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  smtp = await new FakeSmtp().start();
  t = await createTestApp({
    env: { SMTP_URL: smtp.url(), PUBLIC_BASE_URL: BASE, RATE_LIMIT_MAX: '100000' },
    logStream: { write: (line: string) => void logLines.push(line) },
  });
  p = await createPrincipals(t);
});
afterAll(async () => {
  await t?.close();
  await smtp?.stop();
});

const tag = () => crypto.randomBytes(4).toString('hex');
const newEmail = () => `invitee-${tag()}@example.test`;
const base = (org = p.orgA.uid) => `/api/organization/${org}/invitations`;

async function invite(email: string, role: 'admin' | 'member' = 'member', key = p.orgA.admin.key) {
  return call(t.app, 'POST', base(), { key, body: { email, role } });
}

/** The token of the latest invitation mailed to `email`, read from the link in the message. */
function lastToken(email: string): string {
  const mails = smtp.accepted().filter((m) => m.recipients.includes(email));
  expect(mails.length, `mail to ${email}`).toBeGreaterThan(0);
  const text = mails.at(-1)!.parsed.text ?? '';
  const match = /https:\/\/remit\.example\.test\/accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(text);
  expect(match, text).not.toBeNull();
  return match![1]!;
}

async function invited(email = newEmail(), role: 'admin' | 'member' = 'member') {
  const res = await invite(email, role);
  expect(res.status, res.raw).toBe(201);
  return { email, uid: res.body.data.uid as string, token: lastToken(email), res };
}

const expire = (uid: string) =>
  t.db.execute(sql`update invitations set expires_at = now() - interval '1 second' where uid = ${uid}`);

const preview = (token: string, key?: string) => call(t.app, 'GET', `/api/invitations/${token}`, { key });
const accept = (body: Record<string, unknown>, key?: string, headers?: Record<string, string>) =>
  call(t.app, 'POST', '/api/invitations/accept', { key, body, ...(headers ? { headers } : {}) });

describe('POST /api/organization/{organization_uid}/invitations', () => {
  it('201: emails a single-use link, never returns the token, stores only its hash', async () => {
    const email = newEmail();
    const before = Date.now();
    const res = await invite(`  ${email.toUpperCase()} `, 'admin');
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: 'Invitation sent' });
    const data = res.body.data;
    expect(data).toMatchObject({
      organization_uid: p.orgA.uid,
      email,
      role: 'admin',
      status: 'pending',
      invited_by_user_uid: p.orgA.admin.userUid,
      accepted_at: null,
      accepted_by_user_uid: null,
      revoked_at: null,
    });
    // Seven days by default (INVITATION_TTL_S).
    const ttl = new Date(data.expires_at).getTime() - before;
    expect(ttl).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(ttl).toBeLessThan(7 * 86_400_000 + 60_000);

    const mail = smtp
      .accepted()
      .filter((m) => m.recipients.includes(email))
      .at(-1)!;
    expect(mail.parsed.subject).toBe(`A Admin invited you to ${p.orgA.name} on Remit`);
    const token = lastToken(email);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.raw).not.toContain(token);
    const [row] = await rawQuery<{ token_hash: string }>(
      t.db,
      `select token_hash from invitations where uid = $1`,
      [data.uid],
    );
    expect(row!.token_hash).toBe(crypto.createHash('sha256').update(token).digest('hex'));
  });

  it('409 for an address that is already a member, and for one with a pending invitation', async () => {
    expectErrorBody(await invite(p.orgA.member.email), 409, 'already_exists');
    const { email, uid } = await invited();
    const again = expectErrorBody(await invite(email, 'admin'), 409, 'already_exists');
    expect(again.message).toContain(uid);
    expect(again.message).toContain('resend');
  });

  it('an expired invitation is replaced by a new one (the old one reads revoked)', async () => {
    const { email, uid, token } = await invited();
    await expire(uid);
    const res = await invite(email);
    expect(res.status).toBe(201);
    expect(res.body.data.uid).not.toBe(uid);
    const list = await call(t.app, 'GET', base(), { key: p.orgA.admin.key, query: { per_page: 100 } });
    const old = list.body.data.items.find((i: { uid: string }) => i.uid === uid);
    expect(old.status).toBe('revoked');
    expectErrorBody(await preview(token), 404, 'not_found');
  });

  it('422: not an email, an unknown role, an unknown field, a missing field', async () => {
    for (const [body, field] of [
      [{ email: 'not-an-email', role: 'member' }, 'email'],
      [{ email: newEmail(), role: 'owner' }, 'role'],
      [{ email: newEmail(), role: 'member', token: 'x' }, 'token'],
      [{ role: 'member' }, 'email'],
    ] as const) {
      const res = await call(t.app, 'POST', base(), { key: p.orgA.admin.key, body });
      expect(expectErrorBody(res, 422, 'validation_failed').errors?.[0]?.field).toBe(field);
    }
  });

  it('the same address may be invited by two organizations', async () => {
    const email = newEmail();
    expect((await invite(email)).status).toBe(201);
    const res = await call(t.app, 'POST', base(p.orgB.uid), {
      key: p.orgB.admin.key,
      body: { email, role: 'member' },
    });
    expect(res.status).toBe(201);
  });

  it('with an Idempotency-Key: one invitation and one email, the replay sends none', async () => {
    const email = newEmail();
    const headers = { 'idempotency-key': `invite-${tag()}` };
    const first = await call(t.app, 'POST', base(), {
      key: p.orgA.admin.key,
      body: { email, role: 'member' },
      headers,
    });
    expect(first.status).toBe(201);
    const replay = await call(t.app, 'POST', base(), {
      key: p.orgA.admin.key,
      body: { email, role: 'member' },
      headers,
    });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.uid).toBe(first.body.data.uid);
    expect(smtp.accepted().filter((m) => m.recipients.includes(email))).toHaveLength(1);
  });

  it('502 when the email cannot be sent: the invitation stands and can be resent', async () => {
    const email = newEmail();
    smtp.behaviour = { kind: 'reject', code: 550, message: 'mailbox unavailable' };
    let res;
    try {
      res = await invite(email);
    } finally {
      smtp.behaviour = { kind: 'accept' };
    }
    const body = expectErrorBody(res, 502, 'bad_gateway');
    expect(body.message).toContain('resend');
    const list = await call(t.app, 'GET', base(), {
      key: p.orgA.admin.key,
      query: { status: 'pending', per_page: 100 },
    });
    const pending = list.body.data.items.find((i: { email: string }) => i.email === email);
    expect(pending).toBeDefined();
    const resent = await call(t.app, 'POST', `${base()}/${pending.uid}/resend`, { key: p.orgA.admin.key });
    expect(resent.status).toBe(200);
    expect((await preview(lastToken(email))).status).toBe(200);
  });
});

describe('GET /api/organization/{organization_uid}/invitations', () => {
  it('lists newest first with a computed status, filters by status, pages', async () => {
    const pending = await invited();
    const expired = await invited();
    await expire(expired.uid);
    const revoked = await invited();
    expect((await call(t.app, 'DELETE', `${base()}/${revoked.uid}`, { key: p.orgA.admin.key })).status).toBe(
      200,
    );
    const accepted = await invited();
    expect((await accept({ token: accepted.token, full_name: 'New', password: PASSWORD })).status).toBe(200);

    const res = await call(t.app, 'GET', base(), { key: p.orgA.admin.key, query: { per_page: 100 } });
    expect(res.status).toBe(200);
    const byUid = new Map(
      (res.body.data.items as { uid: string; status: string }[]).map((i) => [i.uid, i.status]),
    );
    expect(byUid.get(pending.uid)).toBe('pending');
    expect(byUid.get(expired.uid)).toBe('expired');
    expect(byUid.get(revoked.uid)).toBe('revoked');
    expect(byUid.get(accepted.uid)).toBe('accepted');
    const uids = [...byUid.keys()];
    expect(uids.indexOf(accepted.uid)).toBeLessThan(uids.indexOf(pending.uid));
    expect(res.raw).not.toContain('token');
    expect(
      res.body.data.items.every((i: { organization_uid: string }) => i.organization_uid === p.orgA.uid),
    ).toBe(true);

    for (const status of ['pending', 'expired', 'revoked', 'accepted']) {
      const filtered = await call(t.app, 'GET', base(), {
        key: p.orgA.admin.key,
        query: { status, per_page: 100 },
      });
      expect(filtered.body.data.items.every((i: { status: string }) => i.status === status)).toBe(true);
      expect(filtered.body.data.items.length).toBeGreaterThan(0);
    }
    const page = await call(t.app, 'GET', base(), { key: p.orgA.admin.key, query: { per_page: 2 } });
    expect(page.body.data.items).toHaveLength(2);
    expect(page.body.data._meta).toMatchObject({ page: 1, per_page: 2 });
    expect(page.body.data._meta.total_items).toBeGreaterThanOrEqual(4);
  });

  it('400 for an unknown status or parameter', async () => {
    expectErrorBody(
      await call(t.app, 'GET', base(), { key: p.orgA.admin.key, query: { status: 'open' } }),
      400,
      'invalid_parameter',
    );
    expectErrorBody(
      await call(t.app, 'GET', base(), { key: p.orgA.admin.key, query: { sort: 'email' } }),
      400,
      'unknown_parameter',
    );
  });
});

describe('resend and revoke', () => {
  it('resend: a new link and expiry; the old link stops working', async () => {
    const { email, uid, token, res } = await invited();
    await t.db.execute(
      sql`update invitations set expires_at = now() + interval '1 hour', last_sent_at = now() - interval '1 day' where uid = ${uid}`,
    );
    const resent = await call(t.app, 'POST', `${base()}/${uid}/resend`, { key: p.orgA.admin.key });
    expect(resent.status, resent.raw).toBe(200);
    expect(resent.body.data.status).toBe('pending');
    expect(new Date(resent.body.data.expires_at).getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    expect(new Date(resent.body.data.last_sent_at).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(resent.body.data.created_at).toBe(res.body.data.created_at);
    const newToken = lastToken(email);
    expect(newToken).not.toBe(token);
    expectErrorBody(await preview(token), 404, 'not_found');
    expectErrorBody(await accept({ token, full_name: 'Old', password: PASSWORD }), 404, 'not_found');
    expect((await preview(newToken)).status).toBe(200);
  });

  it('resend of an expired invitation makes it pending again', async () => {
    const { email, uid, token } = await invited();
    await expire(uid);
    expectErrorBody(await preview(token), 410, 'token_expired');
    const resent = await call(t.app, 'POST', `${base()}/${uid}/resend`, { key: p.orgA.admin.key });
    expect(resent.body.data.status).toBe('pending');
    expect((await preview(lastToken(email))).status).toBe(200);
  });

  it('revoke: the link answers as unknown; revoking again keeps the first revoked_at', async () => {
    const { uid, token } = await invited();
    const first = await call(t.app, 'DELETE', `${base()}/${uid}`, { key: p.orgA.admin.key });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ message: 'Invitation revoked', data: { uid, status: 'revoked' } });
    expect(first.body.data.revoked_at).toEqual(expect.any(String));
    const again = await call(t.app, 'DELETE', `${base()}/${uid}`, { key: p.orgA.admin.key });
    expect(again.status).toBe(200);
    expect(again.body.data.revoked_at).toBe(first.body.data.revoked_at);
    expectErrorBody(await preview(token), 404, 'not_found');
    expectErrorBody(await accept({ token, full_name: 'X', password: PASSWORD }), 404, 'not_found');
    expectErrorBody(
      await call(t.app, 'POST', `${base()}/${uid}/resend`, { key: p.orgA.admin.key }),
      409,
      'invalid_state',
    );
  });

  it('409: an accepted invitation is neither resent nor revoked', async () => {
    const { uid, token } = await invited();
    expect((await accept({ token, full_name: 'Ann', password: PASSWORD })).status).toBe(200);
    expectErrorBody(
      await call(t.app, 'POST', `${base()}/${uid}/resend`, { key: p.orgA.admin.key }),
      409,
      'invalid_state',
    );
    expectErrorBody(
      await call(t.app, 'DELETE', `${base()}/${uid}`, { key: p.orgA.admin.key }),
      409,
      'invalid_state',
    );
  });

  it('404: an unknown uid, another organization’s invitation', async () => {
    const missing = crypto.randomUUID();
    expectErrorBody(await call(t.app, 'DELETE', `${base()}/${missing}`, { key: p.orgA.admin.key }), 404);
    expectErrorBody(await call(t.app, 'POST', `${base()}/${missing}/resend`, { key: p.orgA.admin.key }), 404);
  });
});

describe('admins only', () => {
  it('a member gets 403 on every invitation route; nothing is written or sent', async () => {
    const { uid } = await invited();
    const email = newEmail();
    const key = p.orgA.member.key;
    for (const [method, url, body] of [
      ['GET', base(), undefined],
      ['POST', base(), { email, role: 'member' }],
      ['POST', `${base()}/${uid}/resend`, undefined],
      ['DELETE', `${base()}/${uid}`, undefined],
    ] as const) {
      expectErrorBody(await call(t.app, method, url, { key, ...(body ? { body } : {}) }), 403);
    }
    expect(smtp.received.some((m) => m.recipients.includes(email))).toBe(false);
    const list = await call(t.app, 'GET', base(), { key: p.orgA.admin.key, query: { per_page: 100 } });
    expect(list.body.data.items.find((i: { uid: string }) => i.uid === uid).status).toBe('pending');
  });
});

describe('GET /api/invitations/{token}', () => {
  it('200 without a key: organization, email, role, expiry, inviter, whether the account exists', async () => {
    const { email, token, res } = await invited(newEmail(), 'admin');
    const shown = await preview(token);
    expect(shown.status, shown.raw).toBe(200);
    expect(shown.body.data).toEqual({
      organization_uid: p.orgA.uid,
      organization_name: p.orgA.name,
      email,
      role: 'admin',
      expires_at: res.body.data.expires_at,
      invited_by_name: 'A Admin',
      account_exists: false,
    });
    const existing = await invited(p.orgB.member.email);
    expect((await preview(existing.token)).body.data.account_exists).toBe(true);
  });

  it('404 unknown, 410 expired, 409 accepted; a malformed token is 400', async () => {
    expectErrorBody(await preview(crypto.randomBytes(32).toString('base64url')), 404, 'not_found');
    expectErrorBody(await preview('not.a.token'), 400, 'invalid_parameter');
    expectErrorBody(await preview('short'), 404, 'not_found');
    const expired = await invited();
    await expire(expired.uid);
    const gone = expectErrorBody(await preview(expired.token), 410, 'token_expired');
    expect(gone.message).toContain('expired');
    const used = await invited();
    expect((await accept({ token: used.token, full_name: 'U', password: PASSWORD })).status).toBe(200);
    expectErrorBody(await preview(used.token), 409, 'invalid_state');
  });

  it('the token never reaches the logs', async () => {
    const { token } = await invited();
    expect((await preview(token)).status).toBe(200);
    expect((await accept({ token, full_name: 'Logged', password: PASSWORD })).status).toBe(200);
    const all = logLines.join('\n');
    expect(all).toContain('/api/invitations/[redacted]');
    expect(all).toContain('/api/invitations/accept');
    expect(all).not.toContain(token);
    expect(all).not.toContain(PASSWORD);
  });
});

describe('POST /api/invitations/accept as a new user', () => {
  it('creates the user with the password, the membership with the invited role; the link works once', async () => {
    const { email, uid, token } = await invited(newEmail(), 'admin');
    const res = await accept({ token, full_name: '  Grace Hopper ', password: PASSWORD });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      status: 'success',
      message: 'Invitation accepted',
      data: {
        organization_uid: p.orgA.uid,
        organization_name: p.orgA.name,
        role: 'admin',
        email,
        account_created: true,
      },
    });
    const userUid = res.body.data.user_uid as string;
    const [user] = await rawQuery<{
      full_name: string;
      password_hash: string;
      is_default: boolean;
      role: string;
    }>(
      t.db,
      `select u.full_name, c.password_hash, m.is_default, m.role
         from users u join user_credentials c on c.user_uid = u.uid
         join memberships m on m.user_uid = u.uid and m.organization_uid = $2
        where u.uid = $1`,
      [userUid, p.orgA.uid],
    );
    expect(user).toMatchObject({ full_name: 'Grace Hopper', is_default: true, role: 'admin' });
    expect(user!.password_hash).toMatch(/^\$argon2id\$/);
    expect(await verifyPassword(user!.password_hash, PASSWORD)).toBe(true);

    const list = await call(t.app, 'GET', base(), {
      key: p.orgA.admin.key,
      query: { status: 'accepted', per_page: 100 },
    });
    const row = list.body.data.items.find((i: { uid: string }) => i.uid === uid);
    expect(row).toMatchObject({ status: 'accepted', accepted_by_user_uid: userUid });
    const members = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/members`, {
      key: p.orgA.admin.key,
      query: { per_page: 100 },
    });
    expect(members.body.data.items.some((m: { user_uid: string }) => m.user_uid === userUid)).toBe(true);

    const second = await accept({ token, full_name: 'Grace Again', password: PASSWORD });
    expect(expectErrorBody(second, 409, 'invalid_state').message).toContain('already accepted');
  });

  it('422 naming the field: no name, no password, a short password, the email as password', async () => {
    const { email, token } = await invited();
    const cases: [Record<string, unknown>, string][] = [
      [{ token, password: PASSWORD }, 'full_name'],
      [{ token, full_name: '   ', password: PASSWORD }, 'full_name'],
      [{ token, full_name: 'N' }, 'password'],
      [{ token, full_name: 'N', password: 'short' }, 'password'],
      [{ token, full_name: 'N', password: email.toUpperCase() + ' ' }, 'password'],
      [{ token, full_name: 'N', password: PASSWORD, role: 'admin' }, 'role'],
      [{ full_name: 'N', password: PASSWORD }, 'token'],
    ];
    for (const [body, field] of cases) {
      const res = await accept(body);
      expect(expectErrorBody(res, 422, 'validation_failed').errors?.[0]?.field, JSON.stringify(body)).toBe(
        field,
      );
    }
    // None of them used the invitation up.
    expect((await accept({ token, full_name: 'N', password: PASSWORD })).status).toBe(200);
  });

  it('410 for an expired invitation, 404 for an unknown or revoked one', async () => {
    const expired = await invited();
    await expire(expired.uid);
    expectErrorBody(
      await accept({ token: expired.token, full_name: 'E', password: PASSWORD }),
      410,
      'token_expired',
    );
    expectErrorBody(
      await accept({
        token: crypto.randomBytes(32).toString('base64url'),
        full_name: 'E',
        password: PASSWORD,
      }),
      404,
      'not_found',
    );
  });

  it('two acceptances of one link at once: exactly one succeeds', async () => {
    const { token } = await invited();
    const results = await Promise.all([
      accept({ token, full_name: 'Racer One', password: PASSWORD }),
      accept({ token, full_name: 'Racer Two', password: PASSWORD }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
  });
});

describe('POST /api/invitations/accept as an existing user', () => {
  async function existingUser() {
    const email = `existing-${tag()}@example.test`;
    const { api_key: key, user_uid: userUid } = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgB.uid,
      email,
      fullName: 'Existing Person',
      role: 'member',
    });
    return { email, key, userUid };
  }

  it('signed in as the invited user: adds the membership, keeps the user as it is', async () => {
    const user = await existingUser();
    const { token } = await invited(user.email, 'admin');
    const res = await accept({ token }, user.key);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      user_uid: user.userUid,
      organization_uid: p.orgA.uid,
      role: 'admin',
      account_created: false,
    });
    const me = await call(t.app, 'GET', '/api/me', { key: user.key });
    const memberships = me.body.data.memberships as {
      organization_uid: string;
      role: string;
      is_default: boolean;
    }[];
    expect(memberships.find((m) => m.organization_uid === p.orgA.uid)).toMatchObject({
      role: 'admin',
      is_default: false,
    });
    expect(memberships.find((m) => m.organization_uid === p.orgB.uid)).toMatchObject({ is_default: true });
    // The new membership works at once: an admin of A now.
    const members = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/members`, { key: user.key });
    expect(members.status).toBe(200);
    expectErrorBody(await accept({ token }, user.key), 409, 'invalid_state');
  });

  it('409 without signing in, with a message that says to sign in first', async () => {
    const user = await existingUser();
    const { token } = await invited(user.email);
    const res = expectErrorBody(
      await accept({ token, full_name: 'Impostor', password: PASSWORD }),
      409,
      'already_exists',
    );
    expect(res.message).toContain('sign in');
    // Still pending: the user accepts once signed in.
    expect((await accept({ token }, user.key)).status).toBe(200);
  });

  it('403 signed in as someone else; 422 with a name or password; 401 with a bad key', async () => {
    const user = await existingUser();
    const { token } = await invited(user.email);
    expectErrorBody(await accept({ token }, p.orgA.member.key), 403, 'forbidden');
    expect(
      expectErrorBody(await accept({ token, password: PASSWORD }, user.key), 422, 'validation_failed')
        .errors?.[0]?.field,
    ).toBe('password');
    expectErrorBody(await accept({ token }, 'rk_live_not-a-key'), 401, 'unauthorized');
    expect((await accept({ token }, user.key)).status).toBe(200);
  });

  it('with an Idempotency-Key: the acceptance commits once and the retry replays it', async () => {
    const user = await existingUser();
    const { token } = await invited(user.email);
    const headers = { 'idempotency-key': `accept-${tag()}` };
    const first = await accept({ token }, user.key, headers);
    expect(first.status, first.raw).toBe(200);
    const replay = await accept({ token }, user.key, headers);
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const [count] = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from memberships where organization_uid = $1 and user_uid = $2`,
      [p.orgA.uid, user.userUid],
    );
    expect(count!.n).toBe(1);
  });
});

describe('the public routes are limited per client address', () => {
  it('without a key they spend the address’s bucket, and get 429 past it', async () => {
    const limited = await secondInstance(t, { rateLimiter: new MemoryRateLimiter(3, 60_000) });
    try {
      const token = crypto.randomBytes(32).toString('base64url');
      const statuses = [];
      for (let i = 0; i < 3; i++) {
        const res = await call(limited.app, 'GET', `/api/invitations/${token}`);
        expect(res.headers['ratelimit-limit']).toBe('3');
        statuses.push(res.status);
      }
      expect(statuses).toEqual([404, 404, 404]);
      const over = await call(limited.app, 'POST', '/api/invitations/accept', {
        body: { token, full_name: 'X', password: PASSWORD },
      });
      expectErrorBody(over, 429, 'rate_limited');
      expect(over.headers['retry-after']).toEqual(expect.any(String));
    } finally {
      await limited.close();
    }
  });
});

describe('common route checks', () => {
  const env = () => ({ t, p });
  let foreignInvitation = '';
  beforeAll(async () => {
    const res = await call(t.app, 'POST', base(p.orgB.uid), {
      key: p.orgB.admin.key,
      body: { email: newEmail(), role: 'member' },
    });
    foreignInvitation = res.body.data.uid;
  });
  commonRouteChecks(
    'GET invitations',
    {
      method: 'GET',
      url: () => base(),
      scope: 'members:read',
      foreignOrganizationUrl: () => base(p.orgB.uid),
    },
    env,
  );
  commonRouteChecks(
    'POST invitations',
    {
      method: 'POST',
      url: () => base(),
      body: () => ({ email: newEmail(), role: 'member' }),
      scope: 'members:write',
      foreignOrganizationUrl: () => base(p.orgB.uid),
    },
    env,
  );
  commonRouteChecks(
    'POST invitations/{uid}/resend',
    {
      method: 'POST',
      url: async () => `${base()}/${(await invited()).uid}/resend`,
      scope: 'members:write',
      foreignUrl: () => `${base()}/${foreignInvitation}/resend`,
      foreignOrganizationUrl: () => `${base(p.orgB.uid)}/${foreignInvitation}/resend`,
    },
    env,
  );
  commonRouteChecks(
    'DELETE invitations/{uid}',
    {
      method: 'DELETE',
      url: async () => `${base()}/${(await invited()).uid}`,
      scope: 'members:write',
      foreignUrl: () => `${base()}/${foreignInvitation}`,
      foreignOrganizationUrl: () => `${base(p.orgB.uid)}/${foreignInvitation}`,
    },
    env,
  );
});
