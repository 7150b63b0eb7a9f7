import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, rawQuery, type Database } from '../../src/platform/db/client.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { asService, runWithRole, type RoleHolder } from '../../src/platform/db/session-role.ts';
import { adminQuery, testDatabaseUrl, withDatabaseName } from '../helpers/test-database.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

// Row-level security is the second wall (docs/security.md#row-level-security): these routes forget the
// organization filter on purpose, and the database still answers only the caller's organizations.
let t: TestApp;
let p: Principals;

const GLOBAL_TABLES = new Set(['organizations', 'users', 'remit_migrations']);
/**
 * Tables the tenant role has no privilege on at all: a person's own (migration 0013), and the Slack
 * requests already answered (0027), which belong to no organization.
 */
const USER_TABLES = [
  'user_credentials',
  'user_sessions',
  'user_tokens',
  'sign_in_throttle',
  'slack_request_replays',
];

beforeAll(async () => {
  t = await createTestApp({
    beforeReady: (app, deps) => {
      const { db } = deps.database;
      app.get('/api/test-unfiltered/parties', async (request) => {
        request.tenant();
        return rawQuery<{ organization_uid: string }>(db, 'select organization_uid from parties');
      });
      app.get('/api/test-unfiltered/keys', async (request) => {
        request.tenant();
        return rawQuery<{ organization_uid: string }>(db, 'select organization_uid from api_keys');
      });
      app.post<{ Body: { organization_uid: string } }>('/api/test-unfiltered/parties', async (request) => {
        request.tenant();
        await rawQuery(
          db,
          `insert into parties (organization_uid, name, role) values ($1, 'Planted', 'client')`,
          [request.body.organization_uid],
        );
        return { ok: true };
      });
      app.post<{ Body: { organization_uid: string } }>('/api/test-unfiltered/move', async (request) => {
        request.tenant();
        const moved = await rawQuery(
          db,
          `update parties set organization_uid = $1 where name = 'Planted' returning uid`,
          [request.body.organization_uid],
        );
        return { moved: moved.length };
      });
      // Public: no caller, so no organization at all.
      app.get('/api/test-unfiltered/public', { config: { public: true } }, async () =>
        rawQuery(db, 'select organization_uid from parties'),
      );
      // Stepping out explicitly is the bypass.
      app.get('/api/test-unfiltered/bypass', async (request) => {
        request.tenant();
        return asService(() => rawQuery(db, 'select distinct organization_uid from parties'));
      });
    },
  });
  p = await createPrincipals(t);
  for (const org of [p.orgA, p.orgB]) {
    const res = await call(t.app, 'POST', '/api/parties', {
      key: org.admin.key,
      body: { name: `Customer of ${org.name}`, role: 'client' },
    });
    expect(res.status).toBe(201);
  }
});

afterAll(async () => {
  await t?.close();
});

const orgsIn = (rows: { organization_uid: string }[]) => [...new Set(rows.map((r) => r.organization_uid))];

describe('row-level security', () => {
  it('every table with an organization_uid has it enabled, with a policy', async () => {
    const tables = await rawQuery<{ table_name: string; rls: boolean; policies: number }>(
      t.db,
      `select c.relname as table_name, c.relrowsecurity as rls,
              (select count(*)::int from pg_policies p where p.tablename = c.relname and p.schemaname = 'public') as policies
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'p')
          and exists (select 1 from information_schema.columns col
                       where col.table_schema = 'public' and col.table_name = c.relname
                         and col.column_name = 'organization_uid')`,
    );
    expect(tables.length).toBeGreaterThan(25);
    expect(tables.filter((row) => !row.rls || row.policies < 1)).toEqual([]);
    const all = await rawQuery<{ table_name: string }>(
      t.db,
      `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`,
    );
    const tenant = new Set(tables.map((row) => row.table_name));
    // Named, so dropping organization_uid from one (and with it the check above) would be seen.
    for (const name of ['webhook_endpoints', 'events', 'webhook_deliveries'])
      expect(tenant.has(name), name).toBe(true);
    // Everything else is global by design, and listed here so a new table must choose.
    expect(
      all
        .map((r) => r.table_name)
        .filter((name) => !tenant.has(name) && !GLOBAL_TABLES.has(name) && !USER_TABLES.includes(name)),
    ).toEqual([]);
  });

  it("the tenant role cannot touch a person's credentials, sessions, tokens or throttle", async () => {
    const rows = await rawQuery<{ table_name: string; allowed: boolean }>(
      t.db,
      `select t as table_name,
              has_table_privilege('remit_tenant', t, 'SELECT') or has_table_privilege('remit_tenant', t, 'INSERT')
              or has_table_privilege('remit_tenant', t, 'UPDATE') or has_table_privilege('remit_tenant', t, 'DELETE') as allowed
         from unnest($1::text[]) as t`,
      [USER_TABLES],
    );
    expect(rows).toHaveLength(USER_TABLES.length);
    expect(rows.filter((r) => r.allowed)).toEqual([]);
  });

  it('requests run as a role that row-level security binds: not a superuser, not an owner, no bypass', async () => {
    const [role] = await rawQuery<{ rolsuper: boolean; rolbypassrls: boolean; owns: number }>(
      t.db,
      `select rolsuper, rolbypassrls,
              (select count(*)::int from pg_class c where c.relowner = r.oid) as owns
         from pg_roles r where rolname = 'remit_tenant'`,
    );
    expect(role).toEqual({ rolsuper: false, rolbypassrls: false, owns: 0 });
  });

  it('an unfiltered select through the normal path returns only the caller’s organization', async () => {
    // Several rounds, alternating callers: a pooled connection must not keep the last caller's view.
    for (let round = 0; round < 3; round++) {
      for (const org of [p.orgA, p.orgB]) {
        const parties = await call(t.app, 'GET', '/api/test-unfiltered/parties', { key: org.member.key });
        expect(parties.status).toBe(200);
        expect(orgsIn(parties.body)).toEqual([org.uid]);
        const keys = await call(t.app, 'GET', '/api/test-unfiltered/keys', { key: org.admin.key });
        expect(orgsIn(keys.body)).toEqual([org.uid]);
      }
    }
    // The process's own work (no request) sees every organization.
    const all = await rawQuery<{ organization_uid: string }>(t.db, 'select organization_uid from parties');
    expect(orgsIn(all).sort()).toEqual([p.orgA.uid, p.orgB.uid].sort());
  });

  it('a write into another organization is refused by the database, and nothing is written', async () => {
    const res = await call(t.app, 'POST', '/api/test-unfiltered/parties', {
      key: p.orgA.admin.key,
      body: { organization_uid: p.orgB.uid },
    });
    expect(res.status).toBe(500);
    const planted = await rawQuery(t.db, `select 1 from parties where name = 'Planted'`);
    expect(planted).toEqual([]);

    // Its own organization is fine; moving the row to another organization is refused too.
    const own = await call(t.app, 'POST', '/api/test-unfiltered/parties', {
      key: p.orgA.admin.key,
      body: { organization_uid: p.orgA.uid },
    });
    expect(own.status).toBe(200);
    const move = await call(t.app, 'POST', '/api/test-unfiltered/move', {
      key: p.orgA.admin.key,
      body: { organization_uid: p.orgB.uid },
    });
    expect(move.status).toBe(500);
    const [row] = await rawQuery<{ organization_uid: string }>(
      t.db,
      `select organization_uid from parties where name = 'Planted'`,
    );
    expect(row?.organization_uid).toBe(p.orgA.uid);
  });

  it('a request without a caller sees no tenant row', async () => {
    const res = await call(t.app, 'GET', '/api/test-unfiltered/public');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('the bypass is explicit: asService inside a request sees every organization', async () => {
    const res = await call(t.app, 'GET', '/api/test-unfiltered/bypass', { key: p.orgA.member.key });
    expect(res.status).toBe(200);
    expect(orgsIn(res.body).sort()).toEqual([p.orgA.uid, p.orgB.uid].sort());
  });
});

// A production install where the login role is an ordinary owner, not a superuser (PostgreSQL only:
// PGlite has one superuser session).
describe.skipIf(!testDatabaseUrl)('an ordinary login role', () => {
  const tag = crypto.randomBytes(5).toString('hex');
  const user = `remit_owner_${tag}`;
  const name = `remit_rls_${tag}`;
  let database: Database | undefined;

  afterAll(async () => {
    await database?.close();
    await adminQuery(`drop database if exists ${name} with (force)`);
    await adminQuery(`drop role if exists ${user}`);
  });

  it('is told how to get remit_tenant, then migrates, and requests run bound while it owns the tables', async () => {
    await adminQuery(`create role ${user} login nosuperuser nocreaterole`);
    await adminQuery(`create database ${name} owner ${user}`);
    const url = new URL(withDatabaseName(testDatabaseUrl!, name));
    url.username = user;
    database = await openDatabase({ databaseUrl: url.toString(), statementTimeoutMs: 10_000, poolSize: 2 });
    const error = await migrate(database).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/^Migration 0011_row_level_security failed: .*remit_tenant/);
    expect(error?.message).toContain(`Hint: Run once as a superuser: GRANT remit_tenant TO ${user};`);
    // Nothing of the failed migration stayed.
    const [applied] = await rawQuery<{ n: number }>(
      database.db,
      `select count(*)::int as n from information_schema.tables where table_name = 'invoices'`,
    );
    expect(applied?.n).toBe(0);

    await adminQuery(`grant remit_tenant to ${user}`);
    await migrate(database);
    const orgA = crypto.randomUUID();
    const orgB = crypto.randomUUID();
    await rawQuery(database.db, `insert into organizations (uid, name) values ($1, 'A'), ($2, 'B')`, [
      orgA,
      orgB,
    ]);
    await rawQuery(
      database.db,
      `insert into parties (organization_uid, name, role) values ($1, 'a', 'client'), ($2, 'b', 'client')`,
      [orgA, orgB],
    );
    // The owner's own work sees both; as a request for organization A, only A.
    expect(await rawQuery(database.db, 'select 1 from parties')).toHaveLength(2);
    const holder: RoleHolder = { role: { kind: 'tenant', organizationUids: [orgA] } };
    const seen = await runWithRole(holder, () =>
      rawQuery<{ organization_uid: string }>(database!.db, 'select organization_uid from parties'),
    );
    expect(seen).toEqual([{ organization_uid: orgA }]);
  });
});
