import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { generateApiKey } from '../../src/modules/api-keys/api-key-format.ts';
import { issueApiKey } from '../../src/modules/api-keys/api-keys.service.ts';
import { LastUsedRecorder } from '../../src/modules/api-keys/last-used-recorder.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import type { App } from '../../src/platform/http/types.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { until } from '../helpers/until.ts';
import { engine } from '../helpers/test-database.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

let t: TestApp;
let p: Principals;
/** A second instance of the service over the same database (what a second server process would be). */
let other: { app: App; close(): Promise<void> };

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
  other = await secondInstance(t);
});
afterAll(async () => {
  await other?.close();
  await t?.close();
});

/**
 * Counts the statements sent to the database while `fn` runs: a spy that calls through on the driver
 * object every query goes through (drizzle's session client and rawQuery both use it): the PGlite
 * instance, or the node-postgres pool.
 */
async function countQueries(fn: () => Promise<unknown>): Promise<string[]> {
  const target = (t.database.pglite ?? t.database.pool) as unknown as {
    query: (...args: unknown[]) => Promise<unknown>;
  };
  expect(target).toBeDefined();
  // Pending last_used_at writes (a timer flushes them) would be counted too: write them first.
  await t.app.lastUsed.flush();
  await other.app.lastUsed.flush();
  const spy = vi.spyOn(target, 'query');
  try {
    await fn();
    return spy.mock.calls.map((c) => {
      const q = c[0] as string | { text: string };
      return typeof q === 'string' ? q : q.text;
    });
  } finally {
    spy.mockRestore();
  }
}

/** PostgreSQL: the URL of this file's database, for a connection outside the service's pool. */
const connectionString = () =>
  (t.database.pool as unknown as { options: { connectionString: string } }).options.connectionString;

const me = (key: string | undefined, headers: Record<string, string> = {}) =>
  call(t.app, 'GET', '/api/me', { key, headers });

const listKeys = async (key: string, query: Record<string, string | number> = {}) => {
  const res = await call(t.app, 'GET', '/api/api-keys', { key, query: { per_page: 100, ...query } });
  expect(res.status).toBe(200);
  return res.body.data.items as {
    uid: string;
    user_uid: string;
    organization_uid: string;
    last_used_at: string | null;
    expires_at: string | null;
  }[];
};

/** A fresh key of orgA's admin, issued directly (as the CLI does), with its uid. */
async function freshKey(name: string) {
  const { row, key } = await issueApiKey(t.db, t.config.apiKeyPepper, {
    organizationUid: p.orgA.uid,
    userUid: p.orgA.admin.userUid,
    name,
    scopes: null,
  });
  return { uid: row.uid, key };
}

function mistype(key: string): string {
  const last = key.at(-1)!;
  return key.slice(0, -1) + (last === 'a' ? 'b' : 'a');
}

/** The body less its request id, which differs per request by design. */
const withoutRequestId = ({ request_id, ...rest }: Record<string, unknown>) => {
  expect(request_id).toEqual(expect.any(String));
  return rest;
};

describe('401: every cause answers the identical body', () => {
  it('missing header, wrong scheme or spacing, bad checksum, unknown, expired, revoked', async () => {
    const key = p.orgA.admin.key;
    const expired = await freshKey('expired');
    await t.db.execute(
      sql`update api_keys set expires_at = now() - interval '1 second' where uid = ${expired.uid}`,
    );
    const revoked = await freshKey('revoked');
    expect((await me(revoked.key)).status).toBe(200);
    const del = await call(t.app, 'DELETE', `/api/api-keys/${revoked.uid}`, { key });
    expect(del.status).toBe(200);

    const causes: Record<string, Record<string, string>> = {
      'missing header': {},
      'empty header': { authorization: '' },
      Basic: { authorization: `Basic ${key}` },
      'lowercase bearer': { authorization: `bearer ${key}` },
      'two spaces': { authorization: `Bearer  ${key}` },
      'no scheme': { authorization: key },
      'Bearer alone': { authorization: 'Bearer' },
      'trailing junk': { authorization: `Bearer ${key} x` },
      'bad checksum': { authorization: `Bearer ${mistype(key)}` },
      'not a key at all': { authorization: 'Bearer hello' },
      'well-formed unknown key': { authorization: `Bearer ${generateApiKey()}` },
      'expired key': { authorization: `Bearer ${expired.key}` },
      'revoked key': { authorization: `Bearer ${revoked.key}` },
    };
    const bodies = new Map<string, unknown>();
    for (const [cause, headers] of Object.entries(causes)) {
      const res = await me(undefined, headers);
      expectErrorBody(res, 401, 'unauthorized');
      // Counted per address (failed attempts never spend a key's quota), so the headers are there.
      expect(res.headers['ratelimit-limit'], cause).toMatch(/^\d+$/);
      bodies.set(cause, withoutRequestId(res.body));
    }
    const reference = bodies.get('missing header');
    for (const [cause, body] of bodies) expect(body, cause).toEqual(reference);
    // And the valid key still works.
    expect((await me(key)).status).toBe(200);
  });

  it('the same 401 on a route that needs a scope, and on POST', async () => {
    const reference = withoutRequestId((await me(undefined)).body);
    expect(
      withoutRequestId((await call(t.app, 'GET', '/api/api-keys', { key: generateApiKey() })).body),
    ).toEqual(reference);
    const post = await call(t.app, 'POST', '/api/api-keys', { key: mistype(p.orgA.admin.key), body: {} });
    expect(withoutRequestId(post.body)).toEqual(reference);
  });
});

describe('expired keys', () => {
  it('an expired key gets 401 and is still listed with its expires_at', async () => {
    const { uid, key } = await freshKey('soon expired');
    expect((await me(key)).status).toBe(200);
    await t.db.execute(sql`update api_keys set expires_at = now() - interval '1 second' where uid = ${uid}`);
    expectErrorBody(await me(key), 401, 'unauthorized');
    const listed = (await listKeys(p.orgA.admin.key)).find((k) => k.uid === uid);
    expect(listed).toBeDefined();
    expect(listed!.expires_at).toEqual(expect.any(String));
    expect(Date.parse(listed!.expires_at!)).toBeLessThan(Date.now());
  });

  it('a key expiring in the future works', async () => {
    const { uid, key } = await freshKey('later');
    await t.db.execute(sql`update api_keys set expires_at = now() + interval '1 hour' where uid = ${uid}`);
    expect((await me(key)).status).toBe(200);
  });
});

describe('database reads of authentication', () => {
  it('a key with a wrong checksum never reaches the database; a valid key costs one query, then none while held', async () => {
    const { key } = await freshKey('counted');
    await until(async () => t.app.keyAuthCache!.isLive, 'the authentication cache to listen');
    // First use marks last_used_at; flushing it now keeps that write out of the counted requests.
    expect((await me(key)).status).toBe(200);
    await t.app.lastUsed.flush();

    const held = await countQueries(async () => expect((await me(key)).status).toBe(200));
    expect(held).toEqual([]);
    // Anything changed (here: forgotten by hand): the next request reads again, once.
    t.app.keyAuthCache!.notify();
    const valid = await countQueries(async () => {
      expect((await me(key)).status).toBe(200);
      expect((await me(key)).status).toBe(200);
    });
    expect(valid).toHaveLength(1);
    expect(valid[0]).toContain('remit_authenticate');

    const badChecksum = await countQueries(async () => {
      expectErrorBody(await me(mistype(key)), 401);
      expectErrorBody(await me(key.slice(0, -1)), 401);
      expectErrorBody(await me(`${key}x`), 401);
      expectErrorBody(await me(undefined, { authorization: `bearer ${key}` }), 401);
    });
    expect(badChecksum).toEqual([]);

    const unknown = await countQueries(async () => expectErrorBody(await me(generateApiKey()), 401));
    expect(unknown).toHaveLength(1);
  });
});

describe('last_used_at', () => {
  it('is written after a use (off the request path), and at most once a minute', async () => {
    const { uid, key } = await freshKey('usage');
    const find = async () => (await listKeys(p.orgA.admin.key)).find((k) => k.uid === uid)!;
    expect((await find()).last_used_at).toBeNull();

    const before = Date.now();
    expect((await me(key)).status).toBe(200);
    await t.app.lastUsed.flush();
    const first = (await find()).last_used_at;
    expect(first).toEqual(expect.any(String));
    expect(Date.parse(first!)).toBeGreaterThanOrEqual(before - 5_000);

    // A second use within the minute: no new write (this instance's recorder skips it).
    const writes = await countQueries(async () => {
      expect((await me(key)).status).toBe(200);
      await t.app.lastUsed.flush();
    });
    expect(writes.filter((q) => /last_used_at\s*=/.test(q))).toEqual([]);
    expect((await find()).last_used_at).toBe(first);

    // Another instance that never saw the key: its write is refused by the SQL's once-a-minute rule.
    expect((await call(other.app, 'GET', '/api/me', { key })).status).toBe(200);
    await other.app.lastUsed.flush();
    expect((await find()).last_used_at).toBe(first);

    // Once the last write is over a minute old, a use writes again.
    await t.db.execute(
      sql`update api_keys set last_used_at = now() - interval '2 minutes' where uid = ${uid}`,
    );
    const stale = (await find()).last_used_at;
    // (Both instances have marked the key this minute; a recorder that has not, as on a third one.)
    const recorder = new LastUsedRecorder(t.db, (error) => {
      throw error;
    });
    recorder.mark(uid);
    await recorder.close();
    const latest = (await find()).last_used_at;
    expect(Date.parse(latest!)).toBeGreaterThan(Date.parse(stale!));
  });
});

describe('revocation across instances', () => {
  it('a key revoked on one instance gets 401 on the very next request to another', async () => {
    const { uid, key } = await freshKey('revoked elsewhere');
    expect((await call(other.app, 'GET', '/api/me', { key })).status).toBe(200);
    const del = await call(t.app, 'DELETE', `/api/api-keys/${uid}`, { key: p.orgA.admin.key });
    expect(del.status).toBe(200);
    expectErrorBody(await call(other.app, 'GET', '/api/me', { key }), 401, 'unauthorized');
  });
});

describe('authentication cache (docs/performance.md#authentication-cache)', () => {
  const fullName = async (key: string) => {
    const res = await me(key);
    expect(res.status).toBe(200);
    return res.body.data.user.full_name as string;
  };
  const live = () => until(async () => t.app.keyAuthCache!.isLive, 'the authentication cache to listen');

  it('a change to the user, by any statement, is seen by the very next request', async () => {
    await live();
    const { key } = await freshKey('renamed');
    const before = await fullName(key);
    await t.db.execute(
      sql`update users set full_name = 'Renamed By SQL' where uid = ${p.orgA.admin.userUid}`,
    );
    expect(await fullName(key)).toBe('Renamed By SQL');
    await t.db.execute(sql`update users set full_name = ${before} where uid = ${p.orgA.admin.userUid}`);
    expect(await fullName(key)).toBe(before);
  });

  it('scopes changed by SQL hold from the next request; last_used_at writes forget nothing', async () => {
    await live();
    const org = p.orgA;
    const { key } = await freshKey('membership');
    expect((await me(key)).status).toBe(200);
    // The once-a-minute touch is not a change authentication reads.
    const heldBefore = t.app.keyAuthCache!.size;
    await t.db.execute(sql`update api_keys set last_used_at = now() where organization_uid = ${org.uid}`);
    expect(t.app.keyAuthCache!.size).toBe(heldBefore);
    await t.db.execute(sql`update api_keys set scopes = array['invoices:read'] where key_hash <> ''
      and organization_uid = ${org.uid} and name = 'membership'`);
    const res = await me(key);
    expect(res.status).toBe(200);
    expect(res.body.data.api_key.scopes).toEqual(['invoices:read']);
  });

  it.skipIf(engine !== 'postgres')(
    'a key revoked by another process is refused once its notification arrives',
    async () => {
      // A second server with a TTL far beyond this test: only the notification can make it forget.
      const long = await secondInstance(t, { config: { ...t.config, authCacheTtlS: 300 } });
      try {
        await until(async () => long.app.keyAuthCache!.isLive, 'the second cache to listen');
        const { uid, key } = await freshKey('revoked by another process');
        expect((await call(long.app, 'GET', '/api/me', { key })).status).toBe(200);
        expect(long.app.keyAuthCache!.size).toBeGreaterThan(0);
        // Another process: its own connection, outside this process's pool.
        const outside = new pg.Client({ connectionString: connectionString() });
        await outside.connect();
        try {
          await outside.query('update api_keys set revoked_at = now() where uid = $1', [uid]);
        } finally {
          await outside.end();
        }
        await until(async () => long.app.keyAuthCache!.size === 0, 'the notification');
        expectErrorBody(await call(long.app, 'GET', '/api/me', { key }), 401, 'unauthorized');
      } finally {
        await long.close();
      }
    },
  );

  it.skipIf(engine !== 'postgres')(
    'while the listening connection is lost nothing is served from the cache, and after it is back it is',
    async () => {
      await live();
      const { key } = await freshKey('listener lost');
      expect((await me(key)).status).toBe(200);
      await t.app.lastUsed.flush();
      expect(await countQueries(() => me(key))).toEqual([]);

      const outside = new pg.Client({ connectionString: connectionString() });
      await outside.connect();
      try {
        await outside.query(
          `select pg_terminate_backend(pid) from pg_stat_activity
            where application_name = 'remit notifications' and datname = current_database()`,
        );
      } finally {
        await outside.end();
      }
      await until(async () => !t.app.keyAuthCache!.isLive, 'the lost connection to be noticed');
      // Not listening: every request reads the database (a change now would go unheard).
      const reads = await countQueries(async () => {
        expect((await me(key)).status).toBe(200);
        expect((await me(key)).status).toBe(200);
      });
      expect(reads).toHaveLength(2);
      // It reconnects by itself; then keys are held again.
      await live();
      expect((await me(key)).status).toBe(200);
      await t.app.lastUsed.flush();
      expect(await countQueries(() => me(key))).toEqual([]);
    },
  );
});

describe('403', () => {
  it('naming an organization the caller is not a member of', async () => {
    const res = await call(t.app, 'GET', '/api/api-keys', {
      key: p.orgA.admin.key,
      query: { organization_uid: p.orgB.uid },
    });
    expectErrorBody(res, 403, 'not_a_member');
    expect(res.raw).not.toContain(p.orgB.name);
  });

  it('naming an organization that does not exist is 403 too (no existence oracle)', async () => {
    const res = await call(t.app, 'GET', '/api/api-keys', {
      key: p.orgA.admin.key,
      query: { organization_uid: '00000000-0000-4000-8000-000000000000' },
    });
    expect(expectErrorBody(res, 403).code).toBe(
      (
        await call(t.app, 'GET', '/api/api-keys', {
          key: p.orgA.admin.key,
          query: { organization_uid: p.orgB.uid },
        })
      ).body.code,
    );
  });

  it('a key without the route scope', async () => {
    const key = await p.keyWithScopes(['invoices:read']);
    const res = await call(t.app, 'GET', '/api/api-keys', { key });
    expect(expectErrorBody(res, 403, 'missing_scope').message).toContain('api_keys:read');
    expectErrorBody(await call(t.app, 'POST', '/api/api-keys', { key, body: { name: 'x' } }), 403);
    const reader = await p.keyWithScopes(['api_keys:read']);
    expect((await call(t.app, 'GET', '/api/api-keys', { key: reader })).status).toBe(200);
    expectErrorBody(await call(t.app, 'POST', '/api/api-keys', { key: reader, body: { name: 'x' } }), 403);
  });

  it('GET /api/me works with any valid key regardless of scopes, listing memberships and scopes', async () => {
    const scoped = await p.keyWithScopes(['invoices:read', 'email:read']);
    const res = await me(scoped);
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data.user).toMatchObject({ uid: p.orgA.admin.userUid, email: p.orgA.admin.email });
    expect(data.memberships).toEqual([
      { organization_uid: p.orgA.uid, organization_name: p.orgA.name, role: 'admin', is_default: true },
    ]);
    expect(data.default_organization_uid).toBe(p.orgA.uid);
    expect([...data.scopes].sort()).toEqual(['email:read', 'invoices:read']);
    expect([...data.api_key.scopes].sort()).toEqual(['email:read', 'invoices:read']);
    expect(data.api_key.organization_uid).toBe(p.orgA.uid);

    const full = await me(p.orgA.member.key);
    expect(full.status).toBe(200);
    expect(full.body.data.scopes).toEqual([]);
    expect(full.body.data.memberships).toEqual([
      { organization_uid: p.orgA.uid, organization_name: p.orgA.name, role: 'member', is_default: true },
    ]);
  });
});

describe('organization of a call', () => {
  // Own organizations: this block adds a membership, which must not change the other blocks' callers.
  let q: Principals;
  let keyInB: string;

  beforeAll(async () => {
    q = await createPrincipals(t);
    const added = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: q.orgB.uid,
      email: q.orgA.admin.email,
      role: 'member',
    });
    expect(added.user_uid).toBe(q.orgA.admin.userUid);
    keyInB = added.api_key;
  });

  it('GET /api/me lists both memberships; the first joined is the default', async () => {
    for (const key of [q.orgA.admin.key, keyInB]) {
      const data = (await me(key)).body.data;
      expect(data.default_organization_uid).toBe(q.orgA.uid);
      expect(data.memberships).toHaveLength(2);
      expect(data.memberships).toContainEqual({
        organization_uid: q.orgA.uid,
        organization_name: q.orgA.name,
        role: 'admin',
        is_default: true,
      });
      expect(data.memberships).toContainEqual({
        organization_uid: q.orgB.uid,
        organization_name: q.orgB.name,
        role: 'member',
        is_default: false,
      });
    }
    expect((await me(keyInB)).body.data.api_key.organization_uid).toBe(q.orgB.uid);
  });

  it('without organization_uid the default organization is used (whichever key is presented)', async () => {
    for (const key of [q.orgA.admin.key, keyInB]) {
      const items = await listKeys(key);
      expect(items.length).toBeGreaterThan(0);
      expect(items.every((k) => k.organization_uid === q.orgA.uid)).toBe(true);
      // Admin of orgA: everyone's keys there, the member's too.
      expect(items.some((k) => k.user_uid === q.orgA.member.userUid)).toBe(true);
    }
  });

  it('with organization_uid=orgB: orgB, as a member there, so only the own keys', async () => {
    for (const key of [q.orgA.admin.key, keyInB]) {
      const items = await listKeys(key, { organization_uid: q.orgB.uid });
      expect(items.length).toBe(1);
      expect(items[0]).toMatchObject({ organization_uid: q.orgB.uid, user_uid: q.orgA.admin.userUid });
    }
    // orgB's own admin sees that key and their own.
    const adminView = await listKeys(q.orgB.admin.key);
    expect(adminView.some((k) => k.user_uid === q.orgA.admin.userUid)).toBe(true);
    expect(adminView.some((k) => k.user_uid === q.orgB.admin.userUid)).toBe(true);
  });

  it('the member role in orgB applies there: role limits beat the key', async () => {
    const res = await call(t.app, 'POST', '/api/api-keys', {
      key: q.orgA.admin.key,
      body: { name: 'tokens in B', scopes: ['agents:token_usage'], organization_uid: q.orgB.uid },
    });
    expectErrorBody(res, 403);
    const inA = await call(t.app, 'POST', '/api/api-keys', {
      key: q.orgA.admin.key,
      body: { name: 'tokens in A', scopes: ['agents:token_usage'] },
    });
    expect(inA.status).toBe(200);
    expect(inA.body.data.organization_uid).toBe(q.orgA.uid);
  });
});
