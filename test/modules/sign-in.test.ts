import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import {
  browserFrom,
  clearSignInThrottle,
  emailedToken,
  outboxMessages,
  sessionCookieOf,
  setPasswordByEmail,
  signIn,
  totpCode,
} from '../helpers/people.ts';
import { afterFailure, POLICIES } from '../../src/modules/people/sign-in-throttle.ts';

/**
 * Sign-in sessions for people (docs/people.md): password, emailed links, the cookie and its flags,
 * cross-site forgery checks, session lists and revocation, expiry, throttling, TOTP, and the same role
 * rules as with an API key.
 */
let t: TestApp;
let p: Principals;
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  t = await createTestApp({ env: { TRUST_PROXY: 'true' } });
  p = await createPrincipals(t);
  await setPasswordByEmail(t, p.orgA.member.email, PASSWORD);
  await setPasswordByEmail(t, p.orgA.admin.email, PASSWORD);
});
afterAll(async () => t?.close());
// The failures another test made, and the blocks they earned, are not this test's.
beforeEach(() => clearSignInThrottle(t));

describe('password sign-in', () => {
  it('sets an HttpOnly, SameSite=Lax cookie; the session answers /api/me like a key, without one', async () => {
    const res = await call(t.app, 'POST', '/api/auth/sign-in', {
      body: { email: p.orgA.member.email.toUpperCase(), password: PASSWORD },
    });
    expect(res.status, res.raw).toBe(200);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/^remit_session=[\w-]{43};/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    expect(setCookie).toContain('Path=/');
    // Plain HTTP: no Secure (a browser would refuse it) and so no __Host- prefix.
    expect(setCookie).not.toContain('Secure');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.data.csrf_token).toMatch(/^[\w-]{43}$/);
    expect(res.body.data.session.current).toBe(true);
    expect(res.raw).not.toContain(setCookie.split(';')[0]!.split('=')[1]);

    const browser = browserFrom(t, res);
    const me = await browser.call('GET', '/api/me');
    expect(me.status, me.raw).toBe(200);
    expect(me.body.data).toMatchObject({
      authenticated_with: 'session',
      api_key: null,
      session: { uid: res.body.data.session.uid },
      user: { email: p.orgA.member.email },
    });
  });

  it('over HTTPS the cookie is __Host- and Secure, and only that name is read there', async () => {
    const res = await call(t.app, 'POST', '/api/auth/sign-in', {
      headers: { 'x-forwarded-proto': 'https' },
      body: { email: p.orgA.member.email, password: PASSWORD },
    });
    expect(res.status, res.raw).toBe(200);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/^__Host-remit_session=/);
    expect(setCookie).toContain('Secure');
    const token = setCookie.split(';')[0]!.split('=')[1]!;
    const https = (cookie: string) =>
      call(t.app, 'GET', '/api/me', { headers: { cookie, 'x-forwarded-proto': 'https' } });
    expect((await https(`__Host-remit_session=${token}`)).status).toBe(200);
    // A cookie without the prefix may have been planted over plain HTTP: not read over HTTPS.
    expectErrorBody(await https(`remit_session=${token}`), 401, 'unauthorized');
  });

  it('a wrong password and an unknown email get the same answer', async () => {
    const wrong = await call(t.app, 'POST', '/api/auth/sign-in', {
      body: { email: p.orgB.member.email, password: 'not the password at all' },
    });
    const unknown = await call(t.app, 'POST', '/api/auth/sign-in', {
      body: { email: 'nobody-here@example.test', password: 'not the password at all' },
    });
    const noPassword = await call(t.app, 'POST', '/api/auth/sign-in', {
      body: { email: p.orgB.admin.email, password: 'not the password at all' },
    });
    for (const res of [wrong, unknown, noPassword]) expectErrorBody(res, 401, 'invalid_credentials');
    expect(wrong.body.message).toBe(unknown.body.message);
    expect(noPassword.body.message).toBe(unknown.body.message);
    expect(sessionCookieOf(wrong)).toBeUndefined();
  });

  it('refuses malformed bodies with 422', async () => {
    for (const body of [
      {},
      { email: 'x@y.test' },
      { email: 'not-an-email', password: 'x' },
      { email: 'a@b.test', password: 'x', extra: 1 },
    ]) {
      expectErrorBody(await call(t.app, 'POST', '/api/auth/sign-in', { body }), 422);
    }
  });
});

describe('cross-site request forgery', () => {
  it('an unsafe cookie request needs the token and our own Origin', async () => {
    const browser = await signIn(t, p.orgA.member.email, PASSWORD);
    const party = { name: 'CSRF Ltd', role: 'client' };
    const noToken = await call(t.app, 'POST', '/api/parties', {
      headers: { cookie: browser.cookie },
      body: party,
    });
    expectErrorBody(noToken, 403, 'csrf_failed');
    const wrongToken = await call(t.app, 'POST', '/api/parties', {
      headers: { cookie: browser.cookie, 'x-csrf-token': 'x'.repeat(43) },
      body: party,
    });
    expectErrorBody(wrongToken, 403, 'csrf_failed');
    const otherSite = await browser.call('POST', '/api/parties', {
      headers: { origin: 'https://evil.example' },
      body: party,
    });
    expectErrorBody(otherSite, 403, 'csrf_failed');
    const sameSite = await browser.call('POST', '/api/parties', {
      headers: { origin: 'http://localhost:80' },
      body: party,
    });
    expect(sameSite.status, sameSite.raw).toBe(201);
    // Reads need no token.
    expect((await call(t.app, 'GET', '/api/me', { headers: { cookie: browser.cookie } })).status).toBe(200);
  });

  it("one session's token does not pass for another session", async () => {
    const a = await signIn(t, p.orgA.member.email, PASSWORD);
    const b = await signIn(t, p.orgA.member.email, PASSWORD);
    const mixed = await call(t.app, 'POST', '/api/parties', {
      headers: { cookie: a.cookie, 'x-csrf-token': b.csrf },
      body: { name: 'Mixed', role: 'client' },
    });
    expectErrorBody(mixed, 403, 'csrf_failed');
  });
});

describe('roles with a session are the roles with a key', () => {
  it('a member session is refused admin routes; an admin session may use them', async () => {
    const member = await signIn(t, p.orgA.member.email, PASSWORD);
    const admin = await signIn(t, p.orgA.admin.email, PASSWORD);
    const url = `/api/organization/${p.orgA.uid}/settings`;
    expectErrorBody(
      await member.call('PATCH', url, { body: { segregation_of_duties: false } }),
      403,
      'missing_scope',
    );
    expect((await admin.call('PATCH', url, { body: { segregation_of_duties: false } })).status).toBe(200);
    // Another organization's data stays invisible.
    expectErrorBody(await member.call('GET', `/api/organization/${p.orgB.uid}/settings`), 403);
  });
});

describe('idempotency with a session', () => {
  it('a retried POST with the same Idempotency-Key is replayed to the same session only', async () => {
    const browser = await signIn(t, p.orgA.member.email, PASSWORD);
    const headers = { 'idempotency-key': `session-${Date.now()}` };
    const body = { name: 'Retried Ltd', role: 'client' };
    const first = await browser.call('POST', '/api/parties', { headers, body });
    const again = await browser.call('POST', '/api/parties', { headers, body });
    expect(first.status, first.raw).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.uid).toBe(first.body.data.uid);
    // Another session of the same person is another credential: its own request.
    const other = await signIn(t, p.orgA.member.email, PASSWORD);
    const separate = await other.call('POST', '/api/parties', { headers, body });
    expect(separate.body.data.uid).not.toBe(first.body.data.uid);
  });

  it("the person's own routes take the key clients send with every POST, and keep nothing", async () => {
    // Sessions, password and second factor are the person's, written as the service: no organization's
    // request transaction may hold them (it once answered 500), and nothing is stored to replay.
    const email = p.orgB.admin.email;
    await setPasswordByEmail(t, email, PASSWORD);
    const key = (name: string) => ({ 'idempotency-key': `${name}-${Date.now()}` });
    const browser = await signIn(t, email, PASSWORD);
    const setup = await browser.call('POST', '/api/auth/totp/setup', { headers: key('setup') });
    expect(setup.status, setup.raw).toBe(200);
    const code = totpCode(setup.body.data.secret as string);
    const enabled = await browser.call('POST', '/api/auth/totp/enable', {
      headers: key('on'),
      body: { code },
    });
    expect(enabled.status, enabled.raw).toBe(200);
    const disabled = await browser.call('POST', '/api/auth/totp/disable', {
      headers: key('off'),
      body: { password: PASSWORD },
    });
    expect(disabled.status, disabled.raw).toBe(200);
    const newPassword = `${PASSWORD} again`;
    const changed = await browser.call('POST', '/api/auth/password', {
      headers: key('password'),
      body: { current_password: PASSWORD, new_password: newPassword },
    });
    expect(changed.status, changed.raw).toBe(200);

    const current = await signIn(t, email, newPassword);
    const other = await signIn(t, email, newPassword);
    const everywhere = await current.call('POST', '/api/auth/sessions/revoke-all', {
      headers: key('everywhere'),
      body: { keep_current: true },
    });
    expect(everywhere.status, everywhere.raw).toBe(200);
    expectErrorBody(await other.call('GET', '/api/me'), 401);
    const signOut = key('sign-out');
    const out = await current.call('POST', '/api/auth/sign-out', { headers: signOut });
    expect(out.status, out.raw).toBe(200);
    // The same key again is not a replay: the session has ended.
    expectErrorBody(await current.call('POST', '/api/auth/sign-out', { headers: signOut }), 401);
  });
});

describe('sessions: list, revoke, sign out, expiry', () => {
  it('lists my open sessions, revokes one (its next request is 401), and signs out everywhere', async () => {
    const first = await signIn(t, p.orgA.member.email, PASSWORD);
    const second = await signIn(t, p.orgA.member.email, PASSWORD);
    const listed = await first.call('GET', '/api/auth/sessions');
    expect(listed.status).toBe(200);
    const items = listed.body.data.items as { uid: string; current: boolean }[];
    expect(items.filter((s) => s.current)).toHaveLength(1);
    const secondUid = (await second.call('GET', '/api/auth/session')).body.data.session.uid as string;
    expect(items.map((s) => s.uid)).toContain(secondUid);

    expect((await first.call('DELETE', `/api/auth/sessions/${secondUid}`)).status).toBe(200);
    expectErrorBody(await second.call('GET', '/api/me'), 401, 'unauthorized');

    // Another user's session: 404.
    const admin = await signIn(t, p.orgA.admin.email, PASSWORD);
    const adminSession = (await admin.call('GET', '/api/auth/session')).body.data.session.uid as string;
    expectErrorBody(await first.call('DELETE', `/api/auth/sessions/${adminSession}`), 404);

    const third = await signIn(t, p.orgA.member.email, PASSWORD);
    const everywhere = await first.call('POST', '/api/auth/sessions/revoke-all', { body: {} });
    expect(everywhere.status).toBe(200);
    expect(everywhere.body.data.revoked).toBeGreaterThanOrEqual(2);
    expectErrorBody(await first.call('GET', '/api/me'), 401);
    expectErrorBody(await third.call('GET', '/api/me'), 401);
    expect((await admin.call('GET', '/api/me')).status).toBe(200);
  });

  it('sign-out ends the session and clears the cookie', async () => {
    const browser = await signIn(t, p.orgA.member.email, PASSWORD);
    const out = await browser.call('POST', '/api/auth/sign-out');
    expect(out.status).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/^remit_session=; Max-Age=0/);
    expectErrorBody(await browser.call('GET', '/api/me'), 401);
  });

  it('ends after the idle timeout and after the absolute lifetime', async () => {
    const idle = await signIn(t, p.orgA.member.email, PASSWORD);
    const idleUid = (await idle.call('GET', '/api/auth/session')).body.data.session.uid as string;
    await t.db.execute(
      sql`update user_sessions set last_seen_at = now() - make_interval(secs => ${t.config.people.sessionIdleS + 1}) where uid = ${idleUid}`,
    );
    expectErrorBody(await idle.call('GET', '/api/me'), 401);

    const old = await signIn(t, p.orgA.member.email, PASSWORD);
    const oldUid = (await old.call('GET', '/api/auth/session')).body.data.session.uid as string;
    await t.db.execute(
      sql`update user_sessions set expires_at = now() - interval '1 second' where uid = ${oldUid}`,
    );
    expectErrorBody(await old.call('GET', '/api/me'), 401);
  });

  it('a session route with an API key: 403 session_required; no credential: 401', async () => {
    expectErrorBody(
      await call(t.app, 'GET', '/api/auth/session', { key: p.orgA.member.key }),
      403,
      'session_required',
    );
    expectErrorBody(await call(t.app, 'GET', '/api/auth/sessions'), 401);
    expectErrorBody(
      await call(t.app, 'GET', '/api/auth/sessions', {
        headers: { cookie: 'remit_session=forged-token-value' },
      }),
      401,
    );
  });
});

describe('changing the password', () => {
  it('ends every session; the one that asked goes on as a new session, with the token in the answer', async () => {
    const email = p.orgA.member.email;
    const browser = await signIn(t, email, PASSWORD);
    const elsewhere = await signIn(t, email, PASSWORD);
    const oldCookie = browser.cookie;
    const oldCsrf = browser.csrf;
    const newPassword = `${PASSWORD} changed`;

    const wrong = await browser.call('POST', '/api/auth/password', {
      body: { current_password: 'not the password at all', new_password: newPassword },
    });
    expectErrorBody(wrong, 401, 'invalid_credentials');
    expect(wrong.body.errors).toEqual([{ field: 'current_password', message: 'is not right' }]);
    const short = await browser.call('POST', '/api/auth/password', {
      body: { current_password: PASSWORD, new_password: 'too short' },
    });
    expectErrorBody(short, 422, 'validation_failed');
    expect(short.body.errors[0].field).toBe('new_password');
    expect(short.body.message).toContain('at least 12 characters');
    const ownEmail = await browser.call('POST', '/api/auth/password', {
      body: { current_password: PASSWORD, new_password: email.toUpperCase() },
    });
    expectErrorBody(ownEmail, 422, 'validation_failed');
    expect(ownEmail.body.message).toContain('must not be your email address');
    // Refused changes changed nothing.
    expect((await elsewhere.call('GET', '/api/me')).status).toBe(200);

    const changed = await browser.call('POST', '/api/auth/password', {
      body: { current_password: PASSWORD, new_password: newPassword },
    });
    expect(changed.status, changed.raw).toBe(200);
    expect(changed.headers['cache-control']).toBe('no-store');
    const newCookie = sessionCookieOf(changed)!;
    expect(newCookie).toBeDefined();
    expect(newCookie).not.toBe(oldCookie);
    expect(changed.body.data.done).toBe(true);
    expect(changed.body.data.csrf_token).toMatch(/^[\w-]{43}$/);
    expect(changed.body.data.csrf_token).not.toBe(oldCsrf);

    // The old cookie and the other session are over; the new cookie writes with the new token only.
    expectErrorBody(await elsewhere.call('GET', '/api/me'), 401);
    browser.cookie = newCookie;
    expectErrorBody(
      await browser.call('POST', '/api/api-keys', { body: { name: 'stale token' } }),
      403,
      'csrf_failed',
    );
    browser.csrf = changed.body.data.csrf_token as string;
    const created = await browser.call('POST', '/api/api-keys', { body: { name: 'after the change' } });
    expect(created.status, created.raw).toBe(200);
    await browser.call('DELETE', `/api/api-keys/${created.body.data.uid}`);
    const session = await browser.call('GET', '/api/auth/session');
    expect(session.body.data.csrf_token).toBe(browser.csrf);
    expect(session.body.data.session.current).toBe(true);
    browser.cookie = oldCookie;
    expectErrorBody(await browser.call('GET', '/api/me'), 401);

    // The new password signs in, the old one no longer; set back for the other tests.
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/sign-in', { body: { email, password: PASSWORD } }),
      401,
      'invalid_credentials',
    );
    const again = await signIn(t, email, newPassword);
    const back = await again.call('POST', '/api/auth/password', {
      body: { current_password: newPassword, new_password: PASSWORD },
    });
    expect(back.status, back.raw).toBe(200);
  });

  it('not with an API key: 403 session_required, and the password and sessions stay as they were', async () => {
    const email = p.orgA.member.email;
    const browser = await signIn(t, email, PASSWORD);
    const refused = await call(t.app, 'POST', '/api/auth/password', {
      key: p.orgA.member.key,
      body: { current_password: PASSWORD, new_password: `${PASSWORD} by key` },
    });
    expectErrorBody(refused, 403, 'session_required');
    expect((await browser.call('GET', '/api/me')).status).toBe(200);
    expect((await signIn(t, email, PASSWORD)).cookie).toBeTruthy();
  });
});

describe('throttling', () => {
  // The clock stands still (a fake Date): a block of 1 s is still on when the next attempt comes,
  // however slow the machine is between them.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date());
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('grows the delay past the free attempts: 1 s, 2 s, 4 s … capped', () => {
    let row;
    const now = new Date('2026-01-01T00:00:00Z');
    const delays: number[] = [];
    for (let i = 0; i < 20; i++) {
      row = afterFailure(row, { name: 'account:x', policy: POLICIES.account }, now);
      delays.push(row.blockedUntil ? (row.blockedUntil.getTime() - now.getTime()) / 1000 : 0);
    }
    expect(delays.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(delays.slice(5, 9)).toEqual([1, 2, 4, 8]);
    expect(delays.at(-1)).toBe(POLICIES.account.maxDelayS);
    // An hour without failures starts again.
    const later = afterFailure(
      row,
      { name: 'account:x', policy: POLICIES.account },
      new Date(now.getTime() + 3_700_000),
    );
    expect(later.failures).toBe(1);
  });

  it('after repeated failures even the right password waits (429 with Retry-After), for any email', async () => {
    const email = p.orgB.member.email;
    await setPasswordByEmail(t, email, PASSWORD);
    // From addresses of their own (TRUST_PROXY), so other tests' sign-ins from 127.0.0.1 go on.
    const from = (n: number) => ({ 'x-forwarded-for': `198.51.100.${n}` });
    for (let i = 0; i < POLICIES.account.free + 1; i++) {
      await call(t.app, 'POST', '/api/auth/sign-in', {
        headers: from(i),
        body: { email, password: 'wrong password here' },
      });
    }
    const blocked = await call(t.app, 'POST', '/api/auth/sign-in', {
      headers: from(100),
      body: { email, password: PASSWORD },
    });
    expectErrorBody(blocked, 429, 'rate_limited');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // An address with no account is throttled the same way (the answer tells nothing).
    const ghost = 'ghost-user@example.test';
    for (let i = 0; i < POLICIES.account.free + 1; i++) {
      await call(t.app, 'POST', '/api/auth/sign-in', {
        body: { email: ghost, password: 'wrong password here' },
      });
    }
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/sign-in', { body: { email: ghost, password: 'x' } }),
      429,
    );
  });
});

describe('emailed links', () => {
  it('password reset: answers 202 for any address; the link works once, expires, and ends every session', async () => {
    const email = p.orgA.member.email;
    const before = await signIn(t, email, PASSWORD);
    const unknown = await call(t.app, 'POST', '/api/auth/password-reset', {
      body: { email: 'none@example.test' },
    });
    const known = await call(t.app, 'POST', '/api/auth/password-reset', { body: { email } });
    expect(unknown.status).toBe(202);
    expect(known.status).toBe(202);
    expect(known.body.message).toBe(unknown.body.message);
    expect(outboxMessages(t, 'none@example.test')).toHaveLength(0);

    const token = emailedToken(t, email, '/reset-password');
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/password-reset/confirm', { body: { token, password: 'short' } }),
      422,
    );
    const reset = await call(t.app, 'POST', '/api/auth/password-reset/confirm', {
      body: { token, password: PASSWORD },
    });
    expect(reset.status, reset.raw).toBe(200);
    expectErrorBody(await before.call('GET', '/api/me'), 401);
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/password-reset/confirm', { body: { token, password: PASSWORD } }),
      409,
      'token_used',
    );
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/password-reset/confirm', {
        body: { token: 'made-up', password: PASSWORD },
      }),
      400,
      'invalid_token',
    );

    await call(t.app, 'POST', '/api/auth/password-reset', { body: { email } });
    const stale = emailedToken(t, email, '/reset-password');
    await t.db.execute(
      sql`update user_tokens set expires_at = now() - interval '1 second' where used_at is null`,
    );
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/password-reset/confirm', {
        body: { token: stale, password: PASSWORD },
      }),
      410,
      'token_expired',
    );
  });

  it('sign-in link: signs in once', async () => {
    const email = p.orgA.member.email;
    expect((await call(t.app, 'POST', '/api/auth/sign-in-link', { body: { email } })).status).toBe(202);
    const token = emailedToken(t, email, '/sign-in-link');
    const first = await call(t.app, 'POST', '/api/auth/sign-in-link/confirm', { body: { token } });
    expect(first.status, first.raw).toBe(200);
    expect(first.body.data.session.method).toBe('sign_in_link');
    expect((await browserFrom(t, first).call('GET', '/api/me')).status).toBe(200);
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/sign-in-link/confirm', { body: { token } }),
      409,
      'token_used',
    );
  });

  it('a link replaced by a newer one is not valid (never "already used"); the newer one works', async () => {
    const email = p.orgA.member.email;
    for (const [ask, path, confirm, body] of [
      ['/api/auth/sign-in-link', '/sign-in-link', '/api/auth/sign-in-link/confirm', {}],
      [
        '/api/auth/password-reset',
        '/reset-password',
        '/api/auth/password-reset/confirm',
        { password: PASSWORD },
      ],
    ] as const) {
      expect((await call(t.app, 'POST', ask, { body: { email } })).status).toBe(202);
      const older = emailedToken(t, email, path);
      expect((await call(t.app, 'POST', ask, { body: { email } })).status).toBe(202);
      const newer = emailedToken(t, email, path);
      expect(newer).not.toBe(older);
      const replaced = await call(t.app, 'POST', confirm, { body: { token: older, ...body } });
      expectErrorBody(replaced, 400, 'invalid_token');
      expect(replaced.body.message).toMatch(/not valid; ask for a new one/);
      const used = await call(t.app, 'POST', confirm, { body: { token: newer, ...body } });
      expect(used.status, used.raw).toBe(200);
    }
  });
});

describe('TOTP second factor', () => {
  it('set up and turned on with a code; sign-in then needs a fresh code, each accepted once', async () => {
    const email = p.orgA.admin.email;
    const browser = await signIn(t, email, PASSWORD);
    expectErrorBody(
      await call(t.app, 'POST', '/api/auth/totp/setup', { key: p.orgA.admin.key }),
      403,
      'session_required',
    );
    const totpEnabled = async (b = browser) =>
      (await b.call('GET', '/api/auth/session')).body.data.user.totp_enabled as boolean;
    expect(await totpEnabled()).toBe(false);
    const setup = await browser.call('POST', '/api/auth/totp/setup');
    expect(setup.status, setup.raw).toBe(200);
    const secret = setup.body.data.secret as string;
    expect(setup.body.data.otpauth_uri).toMatch(/^otpauth:\/\/totp\/Remit:/);
    // Set up is not on: only a confirmed code turns it on.
    expect(await totpEnabled()).toBe(false);
    // Stored sealed, never in plaintext.
    const stored = await t.db.execute(
      sql`select totp_secret from user_credentials where totp_secret like 'enc:v1:%'`,
    );
    expect((stored as unknown as { rows: unknown[] }).rows.length).toBeGreaterThanOrEqual(1);

    expectErrorBody(await browser.call('POST', '/api/auth/totp/enable', { body: { code: '000000' } }), 422);
    expect(
      (await browser.call('POST', '/api/auth/totp/enable', { body: { code: totpCode(secret) } })).status,
    ).toBe(200);
    expect(await totpEnabled()).toBe(true);

    const noCode = await call(t.app, 'POST', '/api/auth/sign-in', { body: { email, password: PASSWORD } });
    expectErrorBody(noCode, 401, 'second_factor_missing');
    const next = totpCode(secret, 1);
    const withCode = await call(t.app, 'POST', '/api/auth/sign-in', {
      body: { email, password: PASSWORD, totp_code: next },
    });
    expect(withCode.status, withCode.raw).toBe(200);
    expect(withCode.body.data.user.totp_enabled).toBe(true);
    const replayed = await call(t.app, 'POST', '/api/auth/sign-in', {
      body: { email, password: PASSWORD, totp_code: next },
    });
    expectErrorBody(replayed, 401, 'invalid_credentials');

    // An emailed sign-in link needs the code too, and uses the link only when the code is right.
    await call(t.app, 'POST', '/api/auth/sign-in-link', { body: { email } });
    const link = emailedToken(t, email, '/sign-in-link');
    const linkWithout = await call(t.app, 'POST', '/api/auth/sign-in-link/confirm', {
      body: { token: link },
    });
    expectErrorBody(linkWithout, 401, 'second_factor_missing');
    // (The codes of this 30 s window and the next were used above: the last accepted step is forgotten.)
    await t.db.execute(
      sql`update user_credentials set totp_last_step = null where user_uid = ${p.orgA.admin.userUid}`,
    );
    const linkWith = await call(t.app, 'POST', '/api/auth/sign-in-link/confirm', {
      body: { token: link, totp_code: totpCode(secret, 1) },
    });
    expect(linkWith.status, linkWith.raw).toBe(200);

    // Off again with the password (a lost phone), so the next test starts clean.
    const signedIn = browserFrom(t, withCode);
    expect(
      (await signedIn.call('POST', '/api/auth/totp/disable', { body: { password: PASSWORD } })).status,
    ).toBe(200);
    expect(await totpEnabled(signedIn)).toBe(false);
  });

  it('required admin MFA reads how the session was established: sessions opened without a code never pass', async () => {
    const email = p.orgA.admin.email;
    const url = `/api/organization/${p.orgA.uid}/settings`;
    const passwordOnly = await signIn(t, email, PASSWORD);
    const enabling = await signIn(t, email, PASSWORD);
    expect((await passwordOnly.call('PATCH', url, { body: { require_admin_mfa: true } })).status).toBe(200);
    try {
      expectErrorBody(await passwordOnly.call('GET', '/api/parties'), 403, 'second_factor_required');
      // TOTP turned on from another session: that session proved a code and acts; the other ends.
      const setup = await enabling.call('POST', '/api/auth/totp/setup');
      const secret = setup.body.data.secret as string;
      const on = await enabling.call('POST', '/api/auth/totp/enable', { body: { code: totpCode(secret) } });
      expect(on.status, on.raw).toBe(200);
      expect((await enabling.call('GET', '/api/parties')).status).toBe(200);
      expectErrorBody(await passwordOnly.call('GET', '/api/parties'), 401, 'unauthorized');

      // A session opened with the password alone while TOTP was off stays password-only even when the
      // credentials say TOTP is on now (turned on by any other way than from a session).
      await t.db.execute(
        sql`update user_credentials set totp_enabled_at = null where user_uid = ${p.orgA.admin.userUid}`,
      );
      const later = await signIn(t, email, PASSWORD);
      await t.db.execute(
        sql`update user_credentials set totp_enabled_at = now() where user_uid = ${p.orgA.admin.userUid}`,
      );
      expectErrorBody(await later.call('GET', '/api/parties'), 403, 'second_factor_required');
      expect((await enabling.call('GET', '/api/parties')).status).toBe(200);
    } finally {
      await call(t.app, 'PATCH', url, { key: p.orgA.admin.key, body: { require_admin_mfa: false } });
      await enabling.call('POST', '/api/auth/totp/disable', { body: { password: PASSWORD } });
    }
  });

  it('turning it off is throttled as sign-in is: wrong codes and passwords lead to 429', async () => {
    const email = p.orgA.member.email;
    const browser = await signIn(t, email, PASSWORD);
    const setup = await browser.call('POST', '/api/auth/totp/setup');
    const secret = setup.body.data.secret as string;
    expect(
      (await browser.call('POST', '/api/auth/totp/enable', { body: { code: totpCode(secret) } })).status,
    ).toBe(200);
    const answers: number[] = [];
    for (let i = 0; i < 8; i++) {
      const body = i % 2 === 0 ? { code: '000000' } : { password: 'not the password at all' };
      answers.push((await browser.call('POST', '/api/auth/totp/disable', { body })).status);
    }
    // Five free failures, then the account's bucket is blocked for a growing while.
    expect(answers.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(answers).toContain(429);
    const refused = await browser.call('POST', '/api/auth/totp/disable', { body: { password: PASSWORD } });
    expectErrorBody(refused, 429, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Still on; once the wait is over the right password turns it off.
    expect((await browser.call('GET', '/api/auth/session')).body.data.user.totp_enabled).toBe(true);
    await clearSignInThrottle(t);
    expect(
      (await browser.call('POST', '/api/auth/totp/disable', { body: { password: PASSWORD } })).status,
    ).toBe(200);
  });

  it('an organization that requires it refuses its admins signed in without one', async () => {
    const admin = await signIn(t, p.orgA.admin.email, PASSWORD);
    const url = `/api/organization/${p.orgA.uid}/settings`;
    expect((await admin.call('PATCH', url, { body: { require_admin_mfa: true } })).status).toBe(200);
    expectErrorBody(await admin.call('GET', '/api/parties'), 403, 'second_factor_required');
    // Members and API keys are not affected.
    const member = await signIn(t, p.orgA.member.email, PASSWORD);
    expect((await member.call('GET', '/api/parties')).status).toBe(200);
    expect((await call(t.app, 'GET', '/api/parties', { key: p.orgA.admin.key })).status).toBe(200);

    // With TOTP on, the admin signs in with a code and acts again.
    const setup = await admin.call('POST', '/api/auth/totp/setup');
    const secret = setup.body.data.secret as string;
    expect(
      (await admin.call('POST', '/api/auth/totp/enable', { body: { code: totpCode(secret) } })).status,
    ).toBe(200);
    const withCode = await signIn(t, p.orgA.admin.email, PASSWORD, totpCode(secret, 1));
    expect((await withCode.call('GET', '/api/parties')).status).toBe(200);
    await call(t.app, 'PATCH', url, { key: p.orgA.admin.key, body: { require_admin_mfa: false } });
    await withCode.call('POST', '/api/auth/totp/disable', { body: { password: PASSWORD } });
  });
});

describe("the person's own account, through a key", () => {
  it('sessions, sign-out, password and the second factor take a sign-in session; no key, whatever its scopes', async () => {
    const narrow = await p.keyWithScopes(['invoices:read'], 'member');
    const browser = await signIn(t, p.orgA.member.email, PASSWORD);
    const session = (await browser.call('GET', '/api/auth/sessions')).body.data.items[0].uid as string;
    const routes: [string, string, Record<string, unknown>?][] = [
      ['GET', '/api/auth/sessions'],
      ['DELETE', `/api/auth/sessions/${session}`],
      ['POST', '/api/auth/sessions/revoke-all', {}],
      ['POST', '/api/auth/sign-out'],
      ['POST', '/api/auth/password', { current_password: PASSWORD, new_password: `${PASSWORD}-new` }],
      ['POST', '/api/auth/totp/setup'],
      ['POST', '/api/auth/totp/enable', { code: '123456' }],
      ['POST', '/api/auth/totp/disable', { password: PASSWORD }],
      ['GET', '/api/auth/session'],
    ];
    for (const key of [narrow, p.orgA.member.key, p.orgA.admin.key]) {
      for (const [method, url, body] of routes) {
        const res = await call(t.app, method, url, { key, ...(body ? { body } : {}) });
        expectErrorBody(res, 403, 'session_required');
      }
    }
    // Nothing was ended or changed: the session still works and the password is the same.
    expect((await browser.call('GET', '/api/auth/sessions')).status).toBe(200);
    expect((await signIn(t, p.orgA.member.email, PASSWORD)).cookie).toBeTruthy();
  });

  it('preferences take account:read / account:write (a session, or a full-access key, holds them)', async () => {
    const narrow = await p.keyWithScopes(['invoices:read', 'invoices:write'], 'member');
    const body = { approval_emails: false };
    expectErrorBody(await call(t.app, 'GET', '/api/me/preferences', { key: narrow }), 403, 'missing_scope');
    expectErrorBody(
      await call(t.app, 'PATCH', '/api/me/preferences', { key: narrow, body }),
      403,
      'missing_scope',
    );
    const reader = await p.keyWithScopes(['account:read'], 'member');
    expect((await call(t.app, 'GET', '/api/me/preferences', { key: reader })).status).toBe(200);
    expectErrorBody(
      await call(t.app, 'PATCH', '/api/me/preferences', { key: reader, body }),
      403,
      'missing_scope',
    );
    const before = await call(t.app, 'GET', '/api/me/preferences', { key: p.orgA.member.key });
    expect(before.status).toBe(200);
    const browser = await signIn(t, p.orgA.member.email, PASSWORD);
    const changed = await browser.call('PATCH', '/api/me/preferences', {
      body: { approval_emails: before.body.data.approval_emails as boolean },
    });
    expect(changed.status, changed.raw).toBe(200);
  });
});

describe('self-service keys', () => {
  it('a signed-in person creates their own key (shown once); an admin issues one to a member', async () => {
    const member = await signIn(t, p.orgA.member.email, PASSWORD);
    const created = await member.call('POST', '/api/api-keys', { body: { name: 'laptop' } });
    expect(created.status, created.raw).toBe(200);
    const key = created.body.data.key as string;
    expect((await call(t.app, 'GET', '/api/me', { key })).body.data.user.email).toBe(p.orgA.member.email);
    const listed = await member.call('GET', '/api/api-keys');
    expect(listed.raw).not.toContain(key);
    expect((await member.call('DELETE', `/api/api-keys/${created.body.data.uid}`)).status).toBe(200);
    expectErrorBody(await call(t.app, 'GET', '/api/me', { key }), 401);

    // Members may not issue keys to others; admins may, within the member's role.
    expectErrorBody(
      await member.call('POST', '/api/api-keys', { body: { name: 'x', user_uid: p.orgA.admin.userUid } }),
      403,
    );
    const admin = await signIn(t, p.orgA.admin.email, PASSWORD);
    const issued = await admin.call('POST', '/api/api-keys', {
      body: { name: 'for the member', user_uid: p.orgA.member.userUid },
    });
    expect(issued.status, issued.raw).toBe(200);
    expect(issued.body.data.user_uid).toBe(p.orgA.member.userUid);
    expectErrorBody(
      await admin.call('POST', '/api/api-keys', { body: { name: 'x', user_uid: p.orgB.member.userUid } }),
      422,
    );
    expectErrorBody(
      await admin.call('POST', '/api/api-keys', {
        body: { name: 'x', user_uid: p.orgA.member.userUid, scopes: ['agents:token_usage'] },
      }),
      403,
    );
  });
});
