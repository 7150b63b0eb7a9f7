import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { Type } from 'typebox';
import { rawQuery } from '../../src/platform/db/client.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody, type CallResult } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { engine } from '../helpers/test-database.ts';

const SECRET = 'secret internal detail at /x/y.ts:12';
// Raises a real PostgreSQL error with SQLSTATE 57014 (query_canceled, what statement_timeout raises).
const RAISE_57014 = `do $$ begin raise exception 'canceling statement due to statement timeout' using errcode = 'query_canceled'; end $$`;

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp({
    beforeReady: (app, deps) => {
      const { db } = deps.database;
      app.get('/api/test-boom', { config: { public: true } }, async () => {
        throw new Error(SECRET);
      });
      app.get('/api/test-boom-sync', { config: { public: true } }, () => {
        const error = new Error(SECRET) as Error & { detail: string };
        error.detail = 'password=hunter2';
        throw error;
      });
      // The driver's own error (what rawQuery callers see).
      app.get('/api/test-pg-raw', { config: { public: true } }, async () => {
        await rawQuery(db, RAISE_57014);
        return { ok: true };
      });
      // PostgreSQL's disk_full (53100), as PGlite raises it when a data file cannot be extended.
      app.get('/api/test-disk-full', { config: { public: true } }, async () => {
        await rawQuery(
          db,
          `do $$ begin raise exception 'could not extend file: No space left on device' using errcode = 'disk_full'; end $$`,
        );
        return { ok: true };
      });
      // Through drizzle, which wraps the driver's error in a DrizzleQueryError (code on `cause`).
      app.get('/api/test-pg-drizzle', { config: { public: true } }, async () => {
        await db.execute(sql.raw(RAISE_57014));
        return { ok: true };
      });
      // A real statement timeout (PostgreSQL only: PGlite does not enforce statement_timeout).
      app.get('/api/test-pg-timeout', { config: { public: true } }, async () => {
        await db.transaction(async (tx) => {
          await tx.execute(sql`set local statement_timeout = 50`);
          // Far longer than the bound the test checks: only the 50 ms timeout ends it in time.
          await tx.execute(sql`select pg_sleep(30)`);
        });
        return { ok: true };
      });
      app.get(
        '/api/test-enum',
        {
          schema: {
            querystring: Type.Object({
              mode: Type.Optional(Type.Enum(['fast', 'deep'])),
              sort: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
              limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50 })),
            }),
          },
        },
        async (request) => ({ query: request.query }),
      );
    },
  });
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

const get = (url: string, key?: string, headers: Record<string, string> = {}) =>
  call(t.app, 'GET', url, { key, headers });

function expectNoLeak(result: CallResult) {
  expect(result.raw).not.toContain('secret');
  expect(result.raw).not.toContain('hunter2');
  expect(result.raw).not.toContain('/x/y.ts');
  expect(result.raw).not.toMatch(/\bat .+:\d+/);
  expect(result.raw).not.toContain('stack');
  expect(result.raw).not.toMatch(/query_canceled|do \$\$|Failed query/i);
}

describe('the one error body', () => {
  it('has exactly status, status_code, message, code (errors only for validation)', async () => {
    const res = await get('/api/api-keys');
    const body = expectErrorBody(res, 401, 'unauthorized');
    expect(Object.keys(body).sort()).toEqual(['code', 'message', 'request_id', 'status', 'status_code']);
    expect(body.request_id).toBe(res.headers['x-request-id']);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it('validation errors add errors[] of {field, message} and nothing else', async () => {
    const res = await get('/api/api-keys?per_page=0', p.orgA.admin.key);
    const body = expectErrorBody(res, 400, 'invalid_parameter');
    expect(Object.keys(body).sort()).toEqual([
      'code',
      'errors',
      'message',
      'request_id',
      'status',
      'status_code',
    ]);
    for (const e of body.errors!) expect(Object.keys(e).sort()).toEqual(['field', 'message']);
  });
});

describe('unknown routes', () => {
  it('404 route_not_found in the one body, with or without a key', async () => {
    for (const key of [undefined, p.orgA.admin.key, 'not-even-a-key']) {
      const res = await get('/api/does-not-exist', key);
      const body = expectErrorBody(res, 404, 'route_not_found');
      expect(body.message).toContain('/api/does-not-exist');
    }
    expectErrorBody(await call(t.app, 'POST', '/nope', { body: { a: 1 } }), 404, 'route_not_found');
  });

  it('405 method_not_allowed with Allow for an unknown method on a known path', async () => {
    for (const method of ['PUT', 'PATCH']) {
      for (const key of [undefined, p.orgA.admin.key]) {
        const res = await call(t.app, method, '/api/api-keys', { key });
        expectErrorBody(res, 405, 'method_not_allowed');
        expect(res.headers.allow).toBe('GET, HEAD, POST');
      }
    }
    const me = await call(t.app, 'POST', '/api/me', { key: p.orgA.admin.key });
    expectErrorBody(me, 405, 'method_not_allowed');
    expect(me.headers.allow).toBe('GET, HEAD');
    // A path parameter in the pattern matches any value; a path no route has stays 404.
    const del = await call(t.app, 'DELETE', `/api/invoices/${crypto.randomUUID()}`, {
      key: p.orgA.admin.key,
    });
    expectErrorBody(del, 405, 'method_not_allowed');
    expect(del.headers.allow).toBe('GET, HEAD, PUT');
    expectErrorBody(await call(t.app, 'DELETE', '/api/invoices/x/y/z'), 404, 'route_not_found');
  });

  it('the query string is not echoed into the message', async () => {
    const res = await get('/api/nope?token=abc123');
    expect(expectErrorBody(res, 404).message).not.toContain('abc123');
  });
});

describe('malformed requests', () => {
  const post = (payload: string, contentType = 'application/json') =>
    call(t.app, 'POST', '/api/api-keys', {
      key: p.orgA.admin.key,
      body: payload,
      headers: { 'content-type': contentType },
    });

  it('400 invalid_json for a body that is not JSON, or empty', async () => {
    expectErrorBody(await post('{"name": "x",'), 400, 'invalid_json');
    expectErrorBody(await post('{name: x}'), 400, 'invalid_json');
    expectErrorBody(await post(''), 400, 'invalid_json');
  });

  it('415 unsupported_media_type for a body that is not JSON by its Content-Type', async () => {
    expectErrorBody(await post('name=x', 'application/x-www-form-urlencoded'), 415, 'unsupported_media_type');
  });

  it('413 payload_too_large for a body over the route limit (64 KiB by default), naming it', async () => {
    const big = JSON.stringify({ name: 'x', padding: 'a'.repeat(64 * 1024) });
    expect(expectErrorBody(await post(big), 413, 'payload_too_large').message).toContain('64 KiB');
    const justUnder = JSON.stringify({ name: 'x'.repeat(300), pad: 'a'.repeat(64 * 1024 - 400) });
    expect(Buffer.byteLength(justUnder)).toBeLessThan(64 * 1024);
    // Under the limit the body is read and validated (name too long / unknown field), not refused.
    expect((await post(justUnder)).status).toBe(422);
  });
});

describe('query and path validation → 400 naming the field', () => {
  const fieldsOf = (res: CallResult, status: number) =>
    (
      expectErrorBody(res, status, status === 400 ? 'invalid_parameter' : 'validation_failed').errors ?? []
    ).map((e) => e.field);

  it('a bad uuid in the query', async () => {
    expect(fieldsOf(await get('/api/api-keys?organization_uid=nope', p.orgA.admin.key), 400)).toContain(
      'organization_uid',
    );
  });

  it('a bad uuid in the path', async () => {
    const res = await call(t.app, 'DELETE', '/api/api-keys/not-a-uuid', { key: p.orgA.admin.key });
    expect(fieldsOf(res, 400)).toContain('uid');
  });

  it('per_page out of range, or not a number', async () => {
    for (const value of ['0', '101', '-1', 'ten', '2.5']) {
      const res = await get(`/api/api-keys?per_page=${value}`, p.orgA.admin.key);
      expect(fieldsOf(res, 400), `per_page=${value}`).toContain('per_page');
    }
    expect(fieldsOf(await get('/api/api-keys?page=0', p.orgA.admin.key), 400)).toContain('page');
  });

  it('an unknown enum value (enum and union-of-literals schemas)', async () => {
    const mode = expectErrorBody(await get('/api/test-enum?mode=slow', p.orgA.admin.key), 400);
    expect(mode.errors).toContainEqual({ field: 'mode', message: 'must be one of: fast, deep' });
    const sort = await get('/api/test-enum?sort=sideways', p.orgA.admin.key);
    expect(fieldsOf(sort, 400)).toContain('sort');
    const ok = await get('/api/test-enum?mode=deep&sort=asc&limit=3', p.orgA.admin.key);
    expect(ok.status).toBe(200);
    // Query strings are text: "3" is coerced to the declared integer.
    expect(ok.body.query).toEqual({ mode: 'deep', sort: 'asc', limit: 3 });
  });

  it('"3" in a query string is a fine integer', async () => {
    const res = await get('/api/api-keys?per_page=3&page=1', p.orgA.admin.key);
    expect(res.status).toBe(200);
    expect(res.body.data._meta.per_page).toBe(3);
  });
});

describe('body validation → 422 validation_failed naming the field', () => {
  const create = (body: unknown) => call(t.app, 'POST', '/api/api-keys', { key: p.orgA.admin.key, body });
  const fields = (res: CallResult) =>
    (expectErrorBody(res, 422, 'validation_failed').errors ?? []).map((e) => e.field);

  it('missing, wrong type, out of range, unknown field', async () => {
    expect(fields(await create({}))).toContain('name');
    expect(fields(await create({ name: 5 }))).toContain('name');
    expect(fields(await create({ name: '' }))).toContain('name');
    expect(fields(await create({ name: 'x', expires_in_days: 0 }))).toContain('expires_in_days');
    expect(fields(await create({ name: 'x', scopes: 'invoices:read' }))).toContain('scopes');
    expect(fields(await create({ name: 'x', organization_uid: 'nope' }))).toContain('organization_uid');
  });

  it('a JSON body that is not an object', async () => {
    expectErrorBody(await create([1, 2]), 422, 'validation_failed');
    expectErrorBody(await create('"just a string"'), 422, 'validation_failed');
  });

  it('bodies are not type-coerced: "3" where an integer is expected → 422', async () => {
    const res = await create({ name: 'x', expires_in_days: '3' });
    expect(fields(res)).toContain('expires_in_days');
    // The same value as a number is accepted.
    expect((await create({ name: 'coerce-check', expires_in_days: 3 })).status).toBe(200);
  });
});

describe('5xx never leak internals', () => {
  it('a thrown error → 500 internal_error, no message, no stack', async () => {
    for (const url of ['/api/test-boom', '/api/test-boom-sync']) {
      const res = await get(url);
      const body = expectErrorBody(res, 500, 'internal_error');
      expect(Object.keys(body).sort()).toEqual(['code', 'message', 'request_id', 'status', 'status_code']);
      expectNoLeak(res);
      expect(res.headers['x-request-id']).toEqual(expect.any(String));
    }
  });

  it('a full disk under the database (SQLSTATE 53100) → 507 storage_full, without details', async () => {
    const res = await get('/api/test-disk-full');
    expectErrorBody(res, 507, 'storage_full');
    expect(res.raw).not.toContain('could not extend');
  });

  it('a PostgreSQL query_canceled (57014) from the driver → 503 service_unavailable', async () => {
    const res = await get('/api/test-pg-raw');
    expectErrorBody(res, 503, 'service_unavailable');
    expectNoLeak(res);
  });

  it('the same error wrapped by drizzle (DrizzleQueryError with the driver error as cause) → 503', async () => {
    const res = await get('/api/test-pg-drizzle');
    expectErrorBody(res, 503, 'service_unavailable');
    expectNoLeak(res);
  });

  it.skipIf(engine !== 'postgres')('a real statement timeout → 503, not a hung request', async () => {
    const started = Date.now();
    const res = await get('/api/test-pg-timeout');
    expectErrorBody(res, 503, 'service_unavailable');
    // The 50 ms statement timeout ended it, not the sleep or the 10 s default (loose, for a busy machine).
    expect(Date.now() - started).toBeLessThan(5000);
    expectNoLeak(res);
  });
});

describe('success envelope', () => {
  it('GET /api/me: status success, status_code equal to the HTTP status, message, data object', async () => {
    const res = await get('/api/me', p.orgA.admin.key);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'message', 'status', 'status_code']);
    expect(res.body.status).toBe('success');
    expect(res.body.status_code).toBe(res.status);
    expect(typeof res.body.message).toBe('string');
    expect(res.body.message.length).toBeGreaterThan(0);
    expect(res.body.data).toEqual(expect.any(Object));
    expect(Array.isArray(res.body.data)).toBe(false);
  });
});

describe('X-Request-Id', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  it('is on every response, success or error, and differs per request', async () => {
    const responses = [
      await get('/api/me', p.orgA.admin.key),
      await get('/api/me'),
      await get('/api/nope'),
      await get('/healthz'),
      await get('/api/test-boom'),
    ];
    const ids = responses.map((r) => r.headers['x-request-id']);
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a valid incoming X-Request-Id is echoed; an invalid one is replaced', async () => {
    const given = 'trace-abc_123.4:5';
    expect((await get('/api/me', p.orgA.admin.key, { 'x-request-id': given })).headers['x-request-id']).toBe(
      given,
    );
    expect((await get('/api/nope', undefined, { 'x-request-id': given })).headers['x-request-id']).toBe(
      given,
    );
    for (const bad of ['has space', 'x'.repeat(129), '<script>', '']) {
      const res = await get('/api/me', p.orgA.admin.key, { 'x-request-id': bad });
      expect(res.headers['x-request-id'], JSON.stringify(bad)).toMatch(UUID);
    }
  });
});
