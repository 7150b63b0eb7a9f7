import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { buildApp } from '../../src/app.ts';
import { loggerOptions } from '../../src/platform/logging.ts';
import { CONSOLE_PREFIX, EMAILED_LINK_PAGES } from '../../src/platform/http/console.ts';
import { STATEMENT_TIMEOUT_MS, adminQuery } from '../helpers/test-database.ts';

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

describe('health', () => {
  it('GET /healthz answers without a key', async () => {
    const res = await call(t.app, 'GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 while the database answers', async () => {
    const res = await call(t.app, 'GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });
});

describe('GET /readyz while the database is down', () => {
  it('is 503 service_unavailable in the one error body, with its request id', async () => {
    const down = await createTestApp();
    const name = down.databaseUrl ? new URL(down.databaseUrl).pathname.slice(1) : undefined;
    try {
      if (name) {
        // PostgreSQL: no new connection is let in and the app's open ones are cut, as in an outage.
        await adminQuery(`alter database "${name}" with allow_connections false`);
        await adminQuery(
          `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}' and pid <> pg_backend_pid()`,
        );
      } else {
        await down.database.pglite!.close();
      }
      const res = await call(down.app, 'GET', '/readyz');
      expectErrorBody(res, 503, 'service_unavailable');
      expect(res.body.message).toMatch(/database/);
      expect(res.body.request_id).toEqual(res.headers['x-request-id']);
    } finally {
      if (name) await adminQuery(`alter database "${name}" with allow_connections true`);
      await down.close().catch(() => undefined);
    }
  });
});

describe('database', () => {
  it('has statement_timeout set', async () => {
    const [row] = await rawQuery<{ statement_timeout: string }>(t.db, 'show statement_timeout');
    expect(row!.statement_timeout).toBe(`${STATEMENT_TIMEOUT_MS / 1000}s`);
  });

  it('has pg_trgm and gen_random_uuid on this engine', async () => {
    const ext = await rawQuery<{ extname: string }>(t.db, `select extname from pg_extension order by 1`);
    expect(ext.map((e) => e.extname)).toEqual(expect.arrayContaining(['pg_trgm', 'btree_gin']));
    const [sim] = await rawQuery<{ s: number }>(t.db, `select similarity('invoice', 'invoices') as s`);
    expect(sim!.s).toBeGreaterThan(0.5);
    const [u] = await rawQuery<{ u: string }>(t.db, `select gen_random_uuid()::text as u`);
    expect(u!.u).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('GET /api/openapi.json', () => {
  it('is OpenAPI 3.1 with the bearer scheme, the error body component and every route', async () => {
    const res = await call(t.app, 'GET', '/api/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie' });
    expect(doc.security).toEqual([{ bearerAuth: [] }, { sessionCookie: [] }]);
    expect(doc.components.schemas.ErrorBody.properties).toHaveProperty('code');
    const routes = t.app.printRoutes({ commonPrefix: false });
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    // Every API route Fastify knows (bar HEAD twins and the docs UI's own assets) is in the document.
    const expected = [
      'GET /healthz',
      'GET /readyz',
      'GET /api/openapi.json',
      'GET /api/me',
      'POST /api/api-keys',
      'GET /api/api-keys',
      'DELETE /api/api-keys/{uid}',
    ];
    for (const route of expected) expect(documented).toContain(route);
    // And nothing registered is left out (bar HEAD twins, the docs page's own assets, the console's
    // pages: static files, test/platform/console.test.ts; and the hosted invoice pages, HTML for people
    // holding a link: test/modules/invoice-documents.test.ts).
    const isConsole = (url: string) =>
      url.startsWith('/i/') ||
      url === CONSOLE_PREFIX ||
      url.startsWith(`${CONSOLE_PREFIX}/`) ||
      (EMAILED_LINK_PAGES as readonly string[]).includes(url);
    const undocumented = t.app.routeList
      .filter((r) => r.method !== 'HEAD' && !r.url.startsWith('/docs') && !isConsole(r.url))
      .map((r) => `${r.method} ${r.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{key}')}`)
      .filter((r) => !documented.has(r));
    expect(undocumented).toEqual([]);
    expect(routes).toContain('api-keys');
    // Error responses point at the shared component (through a shared response: openapi-document.test.ts).
    const invalid = doc.paths['/api/api-keys'].post.responses['422'];
    const response = invalid.$ref ? doc.components.responses[invalid.$ref.split('/').pop()] : invalid;
    expect(JSON.stringify(response)).toContain('ErrorBody');
  });

  it('the human docs page is served at /docs', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
  });
});

describe('GET /api/me', () => {
  it('returns the user, memberships and the key scopes', async () => {
    const res = await call(t.app, 'GET', '/api/me', { key: p.orgA.member.key });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      user: {
        uid: p.orgA.member.userUid,
        email: p.orgA.member.email,
        full_name: 'A Member',
        id: expect.any(Number),
      },
      memberships: [
        { organization_uid: p.orgA.uid, organization_name: 'Org A', role: 'member', is_default: true },
      ],
      default_organization_uid: p.orgA.uid,
      scopes: [],
    });
  });

  it('401 without a key', async () => {
    expectErrorBody(await call(t.app, 'GET', '/api/me'), 401, 'unauthorized');
  });
});

describe('logs', () => {
  it('are JSON with a request id, and never carry the API key', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    const app = await buildApp(t.deps, { logger: { ...(loggerOptions('info') as object), stream } });
    await app.ready();
    try {
      const key = p.orgA.admin.key;
      await app.inject({
        method: 'POST',
        url: '/api/api-keys',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'x-request-id': 'req-123',
        },
        payload: JSON.stringify({ name: 'logged' }),
      });
      await app.inject({
        method: 'GET',
        url: '/api/me',
        headers: { authorization: `Bearer ${key.slice(0, -2)}xx` },
      });
    } finally {
      await app.close();
    }
    expect(lines.length).toBeGreaterThan(0);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.some((l) => l.request_id === 'req-123')).toBe(true);
    const all = lines.join('\n');
    expect(all).not.toContain(p.orgA.admin.key);
    expect(all).not.toContain(p.orgA.admin.key.slice(8, -6));
    expect(all).not.toMatch(/rk_live_[0-9A-Za-z]{20,}/);
  });
});
