import crypto from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAGE } from '../../src/platform/http/pagination.ts';
import { BODY_LIMITS } from '../../src/platform/http/route-rules.ts';
import { DRAFT_BODY_LIMIT_BYTES } from '../../src/modules/email/email-drafts.schemas.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody, type CallResult } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * The input rules every route shares (issue 14): bounded pages, no NUL or lone surrogate anywhere,
 * dates within 0001–9999, unknown query parameters refused, protocol errors in the one error body, body
 * limits per route, and messages that name the field and what is allowed.
 */

let t: TestApp;
let p: Principals;
let admin: string;

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: string; required?: boolean; schema?: Record<string, unknown> }[];
}

/** The query's required parameters with a valid value (a search's `q`), so only the one tested is wrong. */
function requiredQuery(op: Operation): string {
  return op.parameters
    .filter((x) => x.in === 'query' && x.required && x.name !== 'page')
    .map((x) => `&${x.name}=payment`)
    .join('');
}
let operations: Operation[];

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
  admin = p.orgA.admin.key;
  const doc = (await call(t.app, 'GET', '/api/openapi.json')).body as {
    paths: Record<string, Record<string, { parameters?: Operation['parameters'] }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      parameters: op.parameters ?? [],
    })),
  );
});
afterAll(async () => t?.close());

/** A concrete URL for an OpenAPI path: orgA for organization_uid, a valid-looking value elsewhere. */
function concrete(op: Operation): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (name === 'organization_uid') return p.orgA.uid;
    const schema = op.parameters.find((x) => x.in === 'path' && x.name === name)?.schema ?? {};
    if (schema.format === 'uuid') return crypto.randomUUID();
    if (Array.isArray(schema.enum)) return String(schema.enum[0]);
    if (Array.isArray(schema.anyOf)) {
      const first = schema.anyOf[0] as { const?: string; enum?: string[] };
      return String(first.const ?? first.enum?.[0] ?? 'x');
    }
    return 'some_value';
  });
}

const get = (url: string, key: string | undefined = admin) => call(t.app, 'GET', url, { key });
const fieldsOf = (res: CallResult) => (res.body?.errors ?? []).map((e: { field: string }) => e.field);

describe('page numbers on every paginated list', () => {
  const BAD = [
    '1e308',
    'Infinity',
    '9007199254740993',
    '-1',
    '0',
    '1.5',
    '',
    '0x10',
    ' 1',
    'abc',
    `${MAX_PAGE + 1}`,
  ];

  it('finds the lists from the OpenAPI document', () => {
    const lists = operations.filter((o) => o.method === 'GET' && o.parameters.some((x) => x.name === 'page'));
    expect(lists.length).toBeGreaterThanOrEqual(10);
  });

  it('400 invalid_parameter naming page for each bad value; MAX_PAGE itself is accepted', async () => {
    const lists = operations.filter((o) => o.method === 'GET' && o.parameters.some((x) => x.name === 'page'));
    for (const op of lists) {
      const url = concrete(op);
      for (const page of BAD) {
        const res = await get(`${url}?page=${encodeURIComponent(page)}${requiredQuery(op)}`);
        expectErrorBody(res, 400, 'invalid_parameter');
        expect(fieldsOf(res), `${op.path} page=${page}`).toEqual(['page']);
        expect(res.body.message).toContain(`1 to ${MAX_PAGE}`);
      }
    }
    const deepest = await get(`/api/parties?page=${MAX_PAGE}&per_page=100`);
    expect(deepest.status).toBe(200);
    expect(deepest.body.data.items).toEqual([]);
    expect(deepest.body.data._meta.page).toBe(MAX_PAGE);
  });
});

describe('NUL characters and lone surrogates', () => {
  it('in a query string → 400 naming the parameter', async () => {
    for (const url of ['/api/parties?q=a%00b', '/api/search?q=ab%00', '/api/work-tasks?q=%00%00']) {
      const res = await get(url);
      expectErrorBody(res, 400, 'invalid_parameter');
      expect(fieldsOf(res)).toEqual(['q']);
    }
    // An unpaired surrogate cannot be percent-encoded as UTF-8, but %ED%A0%80 decodes to U+FFFD: stored
    // as what was sent, so it is not refused.
    expect((await get('/api/parties?q=%ED%A0%80')).status).toBe(200);
  });

  it('anywhere in a JSON body, at any depth → 422 naming the field path; nothing is written', async () => {
    const cases: [string, unknown, string][] = [
      ['/api/parties', { name: 'a\u0000b', role: 'client' }, 'name'],
      [
        '/api/parties',
        { name: 'Acme', role: 'client', billing_contact: { name: 'x\u0000' } },
        'billing_contact.name',
      ],
      ['/api/work-tasks', { title: 'ok', context_entities: [], description: '\u0000' }, 'description'],
      ['/api/products', { sku: 'S\u0000', name: 'n', unit_price: 1, currency: 'USD' }, 'sku'],
    ];
    for (const [url, body, field] of cases) {
      const res = await call(t.app, 'POST', url, { key: admin, body });
      expectErrorBody(res, 422, 'validation_failed');
      expect(fieldsOf(res), url).toEqual([field]);
      expect(res.body.message).toContain('NUL');
    }
    // Raw JSON text with an escaped lone surrogate (JSON.parse accepts it; PostgreSQL would mangle it).
    for (const raw of ['{"name":"a\\ud800b","role":"client"}', '{"name":"\\udc00","role":"client"}']) {
      const res = await call(t.app, 'POST', '/api/parties', { key: admin, body: raw });
      expectErrorBody(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual(['name']);
    }
    // A well-formed pair (an emoji) is text.
    const emoji = await call(t.app, 'POST', '/api/parties', {
      key: admin,
      body: '{"name":"Acme \\ud83d\\ude00","role":"client"}',
    });
    expect(emoji.status).toBe(201);
    expect(emoji.body.data.name).toBe('Acme 😀');
    const names = (await get('/api/parties?per_page=100')).body.data.items.map(
      (x: { name: string }) => x.name,
    );
    expect(names).toEqual(['Acme 😀']);
  });

  it('in an object key → 422', async () => {
    const res = await call(t.app, 'POST', '/api/invoices', {
      key: admin,
      body: { invoice_fields: { 'a\u0000': 'x' } },
    });
    expectErrorBody(res, 422, 'validation_failed');
    expect(res.body.errors[0].field).toBe('invoice_fields.a\ufffd');
  });

  it('in the Idempotency-Key header → 400 naming it', async () => {
    const res = await call(t.app, 'POST', '/api/parties', {
      key: admin,
      body: { name: 'x', role: 'client' },
      headers: { 'idempotency-key': 'abc\u0000def' },
    });
    expectErrorBody(res, 400, 'invalid_parameter');
    expect(fieldsOf(res)).toEqual(['Idempotency-Key']);
  });
});

describe('dates out of range', () => {
  const ap = () => `/api/organization/${p.orgA.uid}/ap-invoices`;
  it('filters: year 0, 10000 and extended years → 400 naming the filter', async () => {
    for (const value of [
      '0000-01-01',
      '10000-01-01',
      '+275760-09-13',
      '-000001-01-01',
      '0000-12-31T23:00:00Z',
    ]) {
      const res = await get(`${ap()}?due_date_from=${encodeURIComponent(value)}`);
      expectErrorBody(res, 400, 'invalid_parameter');
      expect(fieldsOf(res), value).toEqual(['due_date_from']);
      expect(res.body.message).toContain('between 0001-01-01 and 9999-12-31');
    }
    // A time zone that moves the instant out of range is out of range too.
    expectErrorBody(await get(`${ap()}?due_date_to=${encodeURIComponent('0001-01-01T00:00:00+01:00')}`), 400);
    for (const value of ['0001-01-01', '9999-12-31', '9999-12-31T23:59:59Z']) {
      expect((await get(`${ap()}?due_date_from=${value}`)).status, value).toBe(200);
    }
  });

  it('fields: refused with 422; the bounds are stored and read back as ISO 8601 on both engines', async () => {
    const base = { invoice_type: 'ACCOUNTS_RECEIVABLE', currency: 'USD' };
    for (const [i, date] of ['0000-01-01', '+275760-09-13', '10000-01-01'].entries()) {
      const res = await call(t.app, 'POST', '/api/invoices', {
        key: admin,
        body: { ...base, invoice_number: `BAD-${i}`, issue_date: date },
      });
      expectErrorBody(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual(['issue_date']);
    }
    const created = await call(t.app, 'POST', '/api/invoices', {
      key: admin,
      body: { ...base, invoice_number: 'EDGE-1', issue_date: '0001-01-01', due_date: '9999-12-31' },
    });
    expect(created.status).toBe(201);
    const read = await get(`/api/invoices/${created.body.data.uid}`);
    expect(read.status).toBe(200);
    expect(read.body.data.issue_date).toMatch(/^0001-01-01/);
    expect(read.body.data.due_date).toMatch(/^9999-12-31/);
  });
});

describe('unknown query parameters', () => {
  it('400 unknown_parameter naming it, with the likely intended name', async () => {
    const res = await get(`/api/organization/${p.orgA.uid}/ap-invoices?sort=due_date`);
    expectErrorBody(res, 400, 'unknown_parameter');
    expect(fieldsOf(res)).toEqual(['sort']);
    expect(res.body.message).toContain('did you mean sort_by?');
    const bogus = await get('/api/parties?bogus=1');
    expectErrorBody(bogus, 400, 'unknown_parameter');
    expect(bogus.body.message).toContain('bogus');
  });

  it('on every API route, also those that take no query at all', async () => {
    const hasRequiredQuery = (o: Operation) =>
      o.parameters.some((x) => x.in === 'query' && (x as { required?: boolean }).required);
    const routes = operations.filter(
      (o) => o.path.startsWith('/api/') && o.path !== '/api/openapi.json' && !hasRequiredQuery(o),
    );
    expect(routes.length).toBeGreaterThan(50);
    for (const op of routes) {
      const res = await call(t.app, op.method, `${concrete(op)}?zz_not_a_parameter=1`, {
        key: admin,
        ...(['POST', 'PUT', 'PATCH'].includes(op.method) ? { body: {} } : {}),
      });
      // A route about the person's own sign-in refuses a key before it reads anything (session only).
      if (res.status === 403 && res.body.code === 'session_required') continue;
      // Fastify validates the body before the query string, so an empty body may be refused first.
      const allowed = ['GET', 'DELETE'].includes(op.method) ? [400] : [400, 415, 422];
      expect(allowed, `${op.method} ${op.path}: ${res.raw}`).toContain(res.status);
      if (res.status === 400) expect(res.body.code, `${op.method} ${op.path}`).toBe('unknown_parameter');
    }
  });

  it('organization_uid is accepted everywhere; an organization the caller is not in → 403', async () => {
    expect((await get(`/api/me?organization_uid=${p.orgA.uid}`)).status).toBe(200);
    expect((await get(`/api/parties?organization_uid=${p.orgA.uid}`)).status).toBe(200);
    expectErrorBody(await get(`/api/me?organization_uid=${p.orgB.uid}`), 403, 'not_a_member');
    expectErrorBody(await get(`/api/parties/${crypto.randomUUID()}?organization_uid=nope`), 400);
  });
});

describe('protocol errors in the one error body', () => {
  it('414 uri_too_long for a path parameter over 100 characters', async () => {
    const res = await get(`/api/invoices/${'a'.repeat(101)}`);
    expectErrorBody(res, 414, 'uri_too_long');
  });

  it('415 for text/plain and XML on a JSON route; 400 invalid_json for bad JSON', async () => {
    for (const type of ['text/plain', 'application/xml']) {
      const res = await call(t.app, 'POST', '/api/parties', {
        key: admin,
        body: 'name=x',
        headers: { 'content-type': type },
      });
      expectErrorBody(res, 415, 'unsupported_media_type');
    }
    expectErrorBody(
      await call(t.app, 'POST', '/api/parties', { key: admin, body: '{"name":' }),
      400,
      'invalid_json',
    );
  });

  describe('over a real socket', () => {
    let port = 0;
    beforeAll(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as net.AddressInfo).port;
    });

    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let data = '';
        socket.on('data', (chunk) => (data += chunk.toString('utf8')));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
        socket.write(request);
      });

    const parse = (response: string) => {
      const [head, body] = response.split('\r\n\r\n');
      const status = Number(head!.split(' ')[1]);
      const headers = Object.fromEntries(
        head!
          .split('\r\n')
          .slice(1)
          .map((line) => [
            line.slice(0, line.indexOf(':')).toLowerCase(),
            line.slice(line.indexOf(':') + 1).trim(),
          ]),
      );
      return { status, body: JSON.parse(body!), headers, raw: body! };
    };

    it('431 headers_too_large when the headers exceed the server limit', async () => {
      const response = parse(
        await raw(`GET /api/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`),
      );
      expectErrorBody(response as CallResult, 431, 'headers_too_large');
    });

    it('400 bad_request for a request that is not HTTP, and for a NUL in a header value', async () => {
      expectErrorBody(parse(await raw('HELLO\r\n\r\n')) as CallResult, 400, 'bad_request');
      expectErrorBody(
        parse(
          await raw(`GET /api/me HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\u0000b\r\n\r\n`),
        ) as CallResult,
        400,
        'bad_request',
      );
    });
  });
});

describe('body limits per route', () => {
  const pad = (bytes: number) => JSON.stringify({ name: 'x', role: 'client', pad: 'a'.repeat(bytes) });

  it('the default limit (64 KiB) answers 413 naming the limit', async () => {
    const res = await call(t.app, 'POST', '/api/parties', { key: admin, body: pad(BODY_LIMITS.DEFAULT) });
    expect(expectErrorBody(res, 413, 'payload_too_large').message).toContain('64 KiB');
  });

  it('routes that store more take more, and refuse past their own limit', async () => {
    const agent = (instructions: string) =>
      call(t.app, 'POST', '/api/agents', { key: admin, body: { name: 'Big', instructions } });
    expect((await agent('i'.repeat(90_000))).status).toBe(201);
    const over = await call(t.app, 'POST', '/api/agents', {
      key: admin,
      body: JSON.stringify({ name: 'x', instructions: 'i'.repeat(BODY_LIMITS.LARGE) }),
    });
    expect(expectErrorBody(over, 413, 'payload_too_large').message).toContain('512 KiB');
  });

  it('email drafts: text over its field limit → 422; a body past the draft limit → 413', async () => {
    const res = await call(t.app, 'POST', '/api/email/drafts', {
      key: admin,
      body: { from_account_id: crypto.randomUUID(), body_text: 'x'.repeat(1024 * 1024) },
    });
    expectErrorBody(res, 422, 'validation_failed');
    expect(fieldsOf(res)).toEqual(['body_text']);
    const huge = await call(t.app, 'POST', '/api/email/drafts', {
      key: admin,
      body: JSON.stringify({ from_account_id: crypto.randomUUID(), pad: 'x'.repeat(DRAFT_BODY_LIMIT_BYTES) }),
    });
    expectErrorBody(huge, 413, 'payload_too_large');
  });
});

describe('validation messages a person can act on', () => {
  const JARGON =
    /must be equal to constant|must match a schema in|must match exactly one schema|must match format/;

  it('a closed list names its values; a union of formats names each; never Ajv jargon', async () => {
    const role = await call(t.app, 'POST', '/api/parties', { key: admin, body: { name: 'x', role: 'both' } });
    expect(role.body.errors).toEqual([{ field: 'role', message: 'must be one of: client, vendor' }]);
    expect(role.body.message).toBe('Invalid request body: role must be one of: client, vendor');

    const date = await get(`/api/organization/${p.orgA.uid}/ap-invoices?due_date=soon`);
    expect(date.body.errors[0].message).toMatch(
      /^must be a date \(YYYY-MM-DD\) or a date-time with a time zone/,
    );

    const samples = [
      await get('/api/parties?per_page=0'),
      await get('/api/parties?role=nobody'),
      await get(`/api/organization/${p.orgA.uid}/ap-invoices?sort_order=sideways`),
      await call(t.app, 'POST', '/api/invoices', { key: admin, body: { invoice_type: 'NOPE' } }),
      await call(t.app, 'POST', '/api/work-tasks', { key: admin, body: { title: 'x', priority: 'asap' } }),
      await call(t.app, 'POST', '/api/work-tasks', {
        key: admin,
        body: { title: 'x', due_date: 'tomorrow' },
      }),
      await call(t.app, 'POST', '/api/agents', { key: admin, body: { name: '' } }),
      date,
      role,
    ];
    for (const res of samples) {
      expect(res.status, res.raw).toBeGreaterThanOrEqual(400);
      expect(res.raw, res.raw).not.toMatch(JARGON);
      for (const e of res.body.errors ?? []) expect(e.field.length).toBeGreaterThan(0);
    }
    const priority = samples[4]!;
    expect(priority.body.errors[0]).toEqual({
      field: 'priority',
      message: 'must be one of: urgent, high, medium, low',
    });
  });
});
