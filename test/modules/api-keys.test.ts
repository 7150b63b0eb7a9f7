import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { hashApiKey } from '../../src/modules/api-keys/api-key-format.ts';
import { SCOPES } from '../../src/platform/http/scopes.ts';

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

const create = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  call(t.app, 'POST', '/api/api-keys', { key, body, headers });

describe('POST /api/api-keys', () => {
  it('creates a key, returns it once in the envelope with 200, and the key works', async () => {
    const res = await create(p.orgA.admin.key, {
      name: 'Reporting',
      scopes: ['invoices:read'],
      expires_in_days: 30,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: expect.any(String) });
    const k = res.body.data;
    expect(k).toMatchObject({
      name: 'Reporting',
      user_uid: p.orgA.admin.userUid,
      organization_uid: p.orgA.uid,
      scopes: ['invoices:read'],
      last_used_at: null,
      revoked_at: null,
    });
    expect(k.key).toMatch(/^rk_live_[0-9A-Za-z]{38}$/);
    expect(k.key_snippet).toBe(`rk_live_...${k.key.slice(-4)}`);
    const days = (Date.parse(k.expires_at) - Date.parse(k.created_at)) / 86_400_000;
    expect(days).toBeCloseTo(30, 2);
    for (const field of ['uid', 'created_at', 'updated_at']) expect(k[field]).toEqual(expect.any(String));

    const me = await call(t.app, 'GET', '/api/me', { key: k.key });
    expect(me.status).toBe(200);
    expect(me.body.data.scopes).toEqual(['invoices:read']);
  });

  it('stores only the SHA-256 of the key', async () => {
    const res = await create(p.orgA.admin.key, { name: 'Hashed' });
    const rows = await t.db.execute(sql`select key_hash from api_keys where uid = ${res.body.data.uid}`);
    const stored = (rows as unknown as { rows: { key_hash: string }[] }).rows[0]!.key_hash;
    expect(stored).toBe(hashApiKey(res.body.data.key));
    const all = await t.db.execute(sql`select * from api_keys where uid = ${res.body.data.uid}`);
    expect(JSON.stringify(all)).not.toContain(res.body.data.key);
  });

  it('without scopes gives full access, shown as an empty list', async () => {
    const res = await create(p.orgA.admin.key, { name: 'Full' });
    expect(res.body.data.scopes).toEqual([]);
    expect(res.body.data.expires_at).toBeNull();
  });

  it('422 for unknown scopes, naming them', async () => {
    const res = await create(p.orgA.admin.key, { name: 'x', scopes: ['invoices:read', 'invoices:delete'] });
    const body = expectErrorBody(res, 422, 'validation_failed');
    expect(body.message).toContain('invoices:delete');
  });

  it('422 for a bad body: missing name, expires_in_days below 1 or not an integer', async () => {
    expectErrorBody(await create(p.orgA.admin.key, {}), 422, 'validation_failed');
    expectErrorBody(await create(p.orgA.admin.key, { name: 'x', expires_in_days: 0 }), 422);
    expectErrorBody(await create(p.orgA.admin.key, { name: 'x', expires_in_days: 1.5 }), 422);
    expectErrorBody(await create(p.orgA.admin.key, { name: 'x', expires_in_days: '3' }), 422);
    const res = await create(p.orgA.admin.key, { name: 'x', scopes: 'invoices:read' });
    expect(expectErrorBody(res, 422).errors?.[0]?.field).toBe('scopes');
  });

  it('a scoped key may create only a subset of its own scopes, never a full-access key', async () => {
    const scoped = await p.keyWithScopes(['api_keys:write', 'invoices:read', 'invoices:write']);
    expect((await create(scoped, { name: 'sub', scopes: ['invoices:read'] })).status).toBe(200);
    expectErrorBody(await create(scoped, { name: 'wider', scopes: ['invoices:read', 'email:write'] }), 403);
    expectErrorBody(await create(scoped, { name: 'full' }), 403);
    expectErrorBody(await create(scoped, { name: 'full', scopes: [] }), 403);
  });

  it('a member cannot grant a scope above their role', async () => {
    const res = await create(p.orgA.member.key, { name: 'tokens', scopes: ['agents:token_usage'] });
    expectErrorBody(res, 403);
    expect((await create(p.orgA.member.key, { name: 'ok', scopes: ['invoices:read'] })).status).toBe(200);
  });

  it('403 when naming an organization the caller does not belong to', async () => {
    expectErrorBody(
      await create(p.orgA.admin.key, { name: 'x', organization_uid: p.orgB.uid }),
      403,
      'not_a_member',
    );
  });

  commonRouteChecks(
    'POST /api/api-keys',
    { method: 'POST', url: () => '/api/api-keys', body: () => ({ name: 'x' }), scope: 'api_keys:write' },
    () => ({ t, p }),
  );
});

describe('GET /api/api-keys', () => {
  it("lists the organization's keys for admins, never the key itself", async () => {
    const res = await call(t.app, 'GET', '/api/api-keys', {
      key: p.orgA.admin.key,
      query: { per_page: 100 },
    });
    expect(res.status).toBe(200);
    const items = res.body.data.items as Record<string, unknown>[];
    expect(items.length).toBeGreaterThanOrEqual(2);
    expect(items.every((k) => k.organization_uid === p.orgA.uid)).toBe(true);
    expect(items.some((k) => k.user_uid === p.orgA.member.userUid)).toBe(true);
    expect(items.every((k) => !('key' in k))).toBe(true);
    expect(res.raw).not.toContain(p.orgA.admin.key);
    expect(res.body.data._meta).toMatchObject({
      page: 1,
      per_page: 100,
      total_items: items.length,
      total_pages: 1,
    });
  });

  it('shows members only their own keys', async () => {
    const res = await call(t.app, 'GET', '/api/api-keys', { key: p.orgA.member.key });
    expect(res.status).toBe(200);
    const items = res.body.data.items as { user_uid: string }[];
    expect(items.length).toBeGreaterThan(0);
    expect(items.every((k) => k.user_uid === p.orgA.member.userUid)).toBe(true);
  });

  it('pages', async () => {
    const res = await call(t.app, 'GET', '/api/api-keys', {
      key: p.orgA.admin.key,
      query: { per_page: 1, page: 2 },
    });
    expect(res.body.data.items).toHaveLength(1);
    expect(res.body.data._meta.page).toBe(2);
    expect(res.body.data._meta.total_pages).toBe(res.body.data._meta.total_items);
  });

  it('400 for per_page out of range or a bad organization_uid', async () => {
    expectErrorBody(await call(t.app, 'GET', '/api/api-keys?per_page=0', { key: p.orgA.admin.key }), 400);
    expectErrorBody(await call(t.app, 'GET', '/api/api-keys?per_page=101', { key: p.orgA.admin.key }), 400);
    expectErrorBody(
      await call(t.app, 'GET', '/api/api-keys?organization_uid=nope', { key: p.orgA.admin.key }),
      400,
    );
  });

  commonRouteChecks(
    'GET /api/api-keys',
    {
      method: 'GET',
      url: () => '/api/api-keys',
      scope: 'api_keys:read',
      foreignOrganizationUrl: ({ p }) => `/api/api-keys?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/api-keys/scopes', () => {
  const scopes = (key: string, query: Record<string, string> = {}) =>
    call(t.app, 'GET', '/api/api-keys/scopes', { key, query });

  it('lists every scope a key may carry, in words, marking those only admins hold', async () => {
    const res = await scopes(p.orgA.admin.key);
    expect(res.status, res.raw).toBe(200);
    const items = res.body.data.items as { scope: string; description: string; admin_only: boolean }[];
    expect(items.map((s) => s.scope)).toEqual([...SCOPES]);
    expect(items.every((s) => s.description.length > 0)).toBe(true);
    expect(items.filter((s) => s.admin_only).map((s) => s.scope)).toEqual([
      'agents:token_usage',
      'organization:write',
      'audit:read',
      'members:read',
      'members:write',
      'webhooks:read',
      'webhooks:write',
    ]);
  });

  it('the list a member gets is the same; what it marks admin-only a member cannot grant', async () => {
    const res = await scopes(p.orgA.member.key);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual((await scopes(p.orgA.admin.key)).body.data);
    const adminOnly = (res.body.data.items as { scope: string; admin_only: boolean }[]).find(
      (s) => s.admin_only,
    )!;
    expectErrorBody(
      await create(p.orgA.member.key, { name: 'x', scopes: [adminOnly.scope] }),
      403,
      'forbidden',
    );
  });

  it('with its own organization named: 200; with a key holding only api_keys:read: 200', async () => {
    expect((await scopes(p.orgA.admin.key, { organization_uid: p.orgA.uid })).status).toBe(200);
    expect((await scopes(await p.keyWithScopes(['api_keys:read']))).status).toBe(200);
  });

  it('400 for an unknown query parameter or a malformed organization_uid', async () => {
    expectErrorBody(await scopes(p.orgA.admin.key, { role: 'admin' }), 400, 'unknown_parameter');
    expectErrorBody(await scopes(p.orgA.admin.key, { organization_uid: 'nope' }), 400);
  });

  commonRouteChecks(
    'GET /api/api-keys/scopes',
    {
      method: 'GET',
      url: () => '/api/api-keys/scopes',
      scope: 'api_keys:read',
      foreignOrganizationUrl: ({ p }) => `/api/api-keys/scopes?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('DELETE /api/api-keys/{uid}', () => {
  it('revokes: 401 on the very next request, still listed, second revoke keeps the first time', async () => {
    const created = (await create(p.orgA.admin.key, { name: 'to revoke' })).body.data;
    expect((await call(t.app, 'GET', '/api/me', { key: created.key })).status).toBe(200);
    const first = await call(t.app, 'DELETE', `/api/api-keys/${created.uid}`, { key: p.orgA.admin.key });
    expect(first.status).toBe(200);
    expect(first.body.data.revoked_at).toEqual(expect.any(String));
    expect(first.body.data.key).toBeUndefined();
    expectErrorBody(await call(t.app, 'GET', '/api/me', { key: created.key }), 401, 'unauthorized');
    const again = await call(t.app, 'DELETE', `/api/api-keys/${created.uid}`, { key: p.orgA.admin.key });
    expect(again.status).toBe(200);
    expect(again.body.data.revoked_at).toBe(first.body.data.revoked_at);
    const list = await call(t.app, 'GET', '/api/api-keys', {
      key: p.orgA.admin.key,
      query: { per_page: 100 },
    });
    expect(list.body.data.items.find((k: { uid: string }) => k.uid === created.uid).revoked_at).toBe(
      first.body.data.revoked_at,
    );
  });

  it("a member cannot revoke someone else's key (404), but may revoke their own", async () => {
    const adminKey = (await create(p.orgA.admin.key, { name: 'admin owned' })).body.data;
    expectErrorBody(
      await call(t.app, 'DELETE', `/api/api-keys/${adminKey.uid}`, { key: p.orgA.member.key }),
      404,
    );
    const own = (await create(p.orgA.member.key, { name: 'mine' })).body.data;
    expect((await call(t.app, 'DELETE', `/api/api-keys/${own.uid}`, { key: p.orgA.member.key })).status).toBe(
      200,
    );
  });

  it('400 for a uid that is not a uuid, 404 for an unknown one', async () => {
    expectErrorBody(await call(t.app, 'DELETE', '/api/api-keys/not-a-uuid', { key: p.orgA.admin.key }), 400);
    expectErrorBody(
      await call(t.app, 'DELETE', '/api/api-keys/00000000-0000-4000-8000-000000000000', {
        key: p.orgA.admin.key,
      }),
      404,
    );
  });

  commonRouteChecks(
    'DELETE /api/api-keys/{uid}',
    {
      method: 'DELETE',
      url: async ({ p }) => {
        const me = await call(t.app, 'GET', '/api/me', { key: p.orgA.member.key });
        return `/api/api-keys/${me.body.data.api_key.uid}`;
      },
      scope: 'api_keys:write',
      foreignUrl: async ({ p }) => {
        const me = await call(t.app, 'GET', '/api/me', { key: p.orgB.admin.key });
        return `/api/api-keys/${me.body.data.api_key.uid}`;
      },
    },
    () => ({ t, p }),
  );
});
