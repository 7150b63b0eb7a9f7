/**
 * Email accounts (CONTRACT §4, §6): create (admins), list paged, get; the SMTP URL is validated,
 * stored and never returned (only host and port); an organization's SMTP host may not be a private
 * address unless ALLOW_PRIVATE_NETWORK_TARGETS; tenancy.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailAccounts } from '../../src/modules/email/email-accounts.tables.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let strict: TestApp;
let strictP: Principals;
let foreignAccount: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  foreignAccount = (await create(p.orgB.admin.key, { email: `b-${tag()}@b.test`, display_name: 'B' })).body
    .data.uid;
  // As in production: organization-configured addresses must not reach private networks.
  strict = await createTestApp({ env: { RATE_LIMIT_MAX: '100000', ALLOW_PRIVATE_NETWORK_TARGETS: 'false' } });
  strictP = await createPrincipals(strict);
});
afterAll(async () => {
  await t?.close();
  await strict?.close();
});

const create = (key: string, body: Record<string, unknown>, app = () => t.app) =>
  call(app(), 'POST', '/api/email/accounts', { key, body });

describe('POST /api/email/accounts', () => {
  it('201 with the account; the SMTP URL is stored but only its host and port come back', async () => {
    const email = `ar-${tag()}@acme.test`;
    const res = await create(p.orgA.admin.key, {
      email,
      display_name: 'Acme Receivables',
      smtp_url: 'smtps://mailer%40acme.test:s3cr%3At@smtp.acme.test:2465',
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201 });
    expect(res.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      organization_uid: p.orgA.uid,
      email,
      display_name: 'Acme Receivables',
      has_smtp_url: true,
      smtp_host: 'smtp.acme.test',
      smtp_port: 2465,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(res.raw).not.toContain('s3cr');
    expect(res.raw).not.toContain('"smtp_url"');
    const [row] = await t.db.select().from(emailAccounts).where(eq(emailAccounts.uid, res.body.data.uid));
    // Stored sealed (docs/security.md#secrets-at-rest), bound to this account's row.
    expect(row!.smtpUrl).toMatch(/^enc:v1:/);
    expect(row!.smtpUrl).not.toContain('s3cr');
    expect(t.deps.secrets.open(row!.smtpUrl!, `email_accounts.smtp_url:${row!.uid}`)).toBe(
      'smtps://mailer%40acme.test:s3cr%3At@smtp.acme.test:2465',
    );

    const got = await call(t.app, 'GET', `/api/email/accounts/${res.body.data.uid}`, {
      key: p.orgA.admin.key,
    });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(res.body.data);
    expect(got.raw).not.toContain('s3cr');
  });

  it('without smtp_url: has_smtp_url false (sent through SMTP_URL or to the outbox); default ports', async () => {
    const plain = await create(p.orgA.admin.key, { email: `plain-${tag()}@acme.test`, display_name: '' });
    expect(plain.status, plain.raw).toBe(201);
    expect(plain.body.data).toMatchObject({ has_smtp_url: false, smtp_host: null, smtp_port: null });
    const submission = await create(p.orgA.admin.key, {
      email: `sub-${tag()}@acme.test`,
      display_name: 'x',
      smtp_url: 'smtp://smtp.acme.test',
    });
    expect(submission.body.data).toMatchObject({ smtp_host: 'smtp.acme.test', smtp_port: 587 });
    const tls = await create(p.orgA.admin.key, {
      email: `tls-${tag()}@acme.test`,
      display_name: 'x',
      smtp_url: 'smtps://u:p@smtp.acme.test',
    });
    expect(tls.body.data).toMatchObject({ smtp_host: 'smtp.acme.test', smtp_port: 465 });
  });

  it('422 for a URL that is not smtp:// or smtps://, or carries a path or query', async () => {
    for (const smtp_url of [
      'https://smtp.acme.test',
      'smtp:/nohost',
      'not a url',
      'smtp://smtp.acme.test/path',
      'smtp://smtp.acme.test?tls.rejectUnauthorized=false',
    ]) {
      const res = await create(p.orgA.admin.key, {
        email: `x-${tag()}@acme.test`,
        display_name: 'x',
        smtp_url,
      });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.[0]?.field, smtp_url).toBe('smtp_url');
    }
  });

  it('422 for a bad email, a missing display_name, or a line break in it', async () => {
    expectErrorBody(await create(p.orgA.admin.key, { email: 'nope', display_name: 'x' }), 422);
    expectErrorBody(await create(p.orgA.admin.key, { email: `a-${tag()}@acme.test` }), 422);
    expectErrorBody(
      await create(p.orgA.admin.key, {
        email: `a-${tag()}@acme.test`,
        display_name: 'x\r\nBcc: evil@x.test',
      }),
      422,
    );
  });

  it('409 for the same address twice in one organization (any case); another organization may use it', async () => {
    const email = `dup-${tag()}@acme.test`;
    expect((await create(p.orgA.admin.key, { email, display_name: 'x' })).status).toBe(201);
    expectErrorBody(await create(p.orgA.admin.key, { email: email.toUpperCase(), display_name: 'y' }), 409);
    expect((await create(p.orgB.admin.key, { email, display_name: 'x' })).status).toBe(201);
  });

  it('403 for a member: only admins connect sending accounts', async () => {
    const res = await create(p.orgA.member.key, { email: `m-${tag()}@acme.test`, display_name: 'x' });
    expectErrorBody(res, 403, 'forbidden');
  });

  it('refuses a private or loopback SMTP host unless private targets are allowed', async () => {
    for (const smtp_url of [
      'smtp://127.0.0.1:2525',
      'smtp://10.1.2.3',
      'smtps://[::1]:465',
      'smtp://localhost',
    ]) {
      const res = await create(
        strictP.orgA.admin.key,
        { email: `p-${tag()}@acme.test`, display_name: 'x', smtp_url },
        () => strict.app,
      );
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toBe('smtp_url');
    }
    // The test app allows them (ALLOW_PRIVATE_NETWORK_TARGETS=true, as local development does).
    const allowed = await create(p.orgA.admin.key, {
      email: `local-${tag()}@acme.test`,
      display_name: 'x',
      smtp_url: 'smtp://127.0.0.1:2525',
    });
    expect(allowed.status, allowed.raw).toBe(201);
  });

  commonRouteChecks(
    'POST /api/email/accounts',
    {
      method: 'POST',
      url: () => '/api/email/accounts',
      body: () => ({ email: `chk-${tag()}@acme.test`, display_name: 'x' }),
      scope: 'email:write',
      foreignOrganizationBody: ({ p }) => ({
        organization_uid: p.orgB.uid,
        email: `chk-${tag()}@acme.test`,
        display_name: 'x',
      }),
    },
    () => ({ t, p }),
  );
});

describe('GET /api/email/accounts', () => {
  it("lists the organization's accounts oldest first, paged, never another organization's", async () => {
    const fresh = await createPrincipals(t);
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await create(fresh.orgA.admin.key, {
        email: `list-${i}-${tag()}@acme.test`,
        display_name: `n${i}`,
        smtp_url: 'smtp://user:hunter2@smtp.acme.test:25',
      });
      made.push(res.body.data.uid);
    }
    const page1 = await call(t.app, 'GET', '/api/email/accounts', {
      key: fresh.orgA.member.key,
      query: { per_page: 2 },
    });
    expect(page1.status, page1.raw).toBe(200);
    expect(page1.body.data._meta).toEqual({ page: 1, per_page: 2, total_pages: 2, total_items: 3 });
    expect(page1.body.data.items.map((a: { uid: string }) => a.uid)).toEqual(made.slice(0, 2));
    expect(page1.raw).not.toContain('hunter2');
    const page2 = await call(t.app, 'GET', '/api/email/accounts', {
      key: fresh.orgA.member.key,
      query: { page: 2, per_page: 2 },
    });
    expect(page2.body.data.items.map((a: { uid: string }) => a.uid)).toEqual(made.slice(2));
    const other = await call(t.app, 'GET', '/api/email/accounts', { key: fresh.orgB.admin.key });
    expect(other.body.data._meta.total_items).toBe(0);
  });

  it('400 for per_page out of range', async () => {
    expectErrorBody(
      await call(t.app, 'GET', '/api/email/accounts', { key: p.orgA.admin.key, query: { per_page: 101 } }),
      400,
    );
  });

  commonRouteChecks(
    'GET /api/email/accounts',
    {
      method: 'GET',
      url: () => '/api/email/accounts',
      scope: 'email:read',
      foreignOrganizationUrl: ({ p }) => `/api/email/accounts?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/email/accounts/{uid}', () => {
  it('404 for an unknown uid', async () => {
    expectErrorBody(
      await call(t.app, 'GET', `/api/email/accounts/${MISSING}`, { key: p.orgA.admin.key }),
      404,
    );
  });

  commonRouteChecks(
    'GET /api/email/accounts/{uid}',
    {
      method: 'GET',
      url: async ({ p }) =>
        `/api/email/accounts/${(await create(p.orgA.admin.key, { email: `g-${tag()}@acme.test`, display_name: 'x' })).body.data.uid}`,
      scope: 'email:read',
      foreignUrl: () => `/api/email/accounts/${foreignAccount}`,
    },
    () => ({ t, p }),
  );
});
