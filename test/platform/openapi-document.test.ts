import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../src/platform/http/errors.ts';
import { errorCodesOf } from '../../src/platform/http/openapi.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { sanitized, undeclaredErrors } from '../helpers/route-records.ts';

// The OpenAPI document as clients and generators read it (issue 19, docs/openapi.md): every operation
// named, summarised and tagged. Redocly's `recommended` rules run over the same document in `npm run lint`.

interface Media {
  schema?: Record<string, unknown>;
  examples?: Record<string, { value: unknown }>;
}
interface Response {
  $ref?: string;
  description?: string;
  headers?: Record<string, { $ref?: string }>;
  content?: Record<string, Media>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name?: string; in?: string; $ref?: string }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, Response>;
}
type Doc = {
  tags?: { name: string; description?: string }[];
  servers?: { url: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, unknown>;
    headers: Record<string, unknown>;
    parameters: Record<string, { name: string; in: string }>;
    responses: Record<string, Response>;
  };
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

let t: TestApp;
let p: Principals;
let doc: Doc;
let operations: { name: string; path: string; method: string; op: Operation }[];

beforeAll(async () => {
  t = await createTestApp({ env: { PUBLIC_BASE_URL: 'https://remit.test/ignored/path/' } });
  p = await createPrincipals(t);
  const res = await call(t.app, 'GET', '/api/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body as Doc;
  operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, path, method, op })),
  );
});
afterAll(async () => t?.close());

describe('the OpenAPI document’s operations', () => {
  it('has every operation', () => {
    expect(operations.length).toBeGreaterThan(90);
  });

  it('names every operation with a camelCase operationId', () => {
    const bad = operations.filter(({ op }) => !/^[a-z][A-Za-z0-9]+$/.test(op.operationId ?? ''));
    expect(bad.map((o) => `${o.name}: ${String(o.op.operationId)}`)).toEqual([]);
  });

  it('never gives two operations the same operationId', () => {
    const seen = new Map<string, string>();
    const duplicates: string[] = [];
    for (const { name, op } of operations) {
      const other = seen.get(op.operationId!);
      if (other) duplicates.push(`${op.operationId}: ${other} and ${name}`);
      seen.set(op.operationId!, name);
    }
    expect(duplicates).toEqual([]);
  });

  it('gives every operation a summary and at least one tag', () => {
    const bad = operations.filter(
      ({ op }) => !op.summary?.trim() || !Array.isArray(op.tags) || op.tags.length === 0,
    );
    expect(bad.map((o) => o.name)).toEqual([]);
  });

  it('tags every operation with a declared, described tag', () => {
    const declared = new Map((doc.tags ?? []).map((tag) => [tag.name, tag.description]));
    expect([...declared.values()].every((description) => description && description.length > 10)).toBe(true);
    const undeclared = operations.flatMap(({ name, op }) =>
      (op.tags ?? []).filter((tag) => !declared.has(tag)).map((tag) => `${name}: ${tag}`),
    );
    expect(undeclared).toEqual([]);
  });

  it('documents the one client failure of GET /api/openapi.json, an unknown query parameter', async () => {
    expect(Object.keys(doc.paths['/api/openapi.json']!.get!.responses)).toEqual(['200', '400', '500', '503']);
    expect(codesOf(doc.paths['/api/openapi.json']!.get!, '400')).toEqual([
      'invalid_parameter',
      'unknown_parameter',
    ]);
    const res = await call(t.app, 'GET', '/api/openapi.json?format=yaml');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('unknown_parameter');
  });

  it('keeps the operationIds clients are built on', () => {
    // Renaming one breaks generated clients: these are part of the interface (docs/openapi.md).
    const byName = Object.fromEntries(operations.map(({ name, op }) => [name, op.operationId]));
    expect(byName).toMatchObject({
      'GET /api/organization/{organization_uid}/ap-invoices': 'listApInvoices',
      'GET /api/organization/{organization_uid}/ar-invoices': 'listArInvoices',
      'GET /api/invoices/{uid}': 'getInvoice',
      'PATCH /api/work-tasks/{task_uid}': 'updateWorkTask',
      'DELETE /api/email/drafts/{uid}': 'cancelEmailDraft',
      'DELETE /api/api-keys/{uid}': 'revokeApiKey',
      'POST /api/agents/{agent_uid}/runs': 'startAgentRun',
    });
  });
});

describe('the OpenAPI document’s frame', () => {
  it('names one server: the origin of PUBLIC_BASE_URL', () => {
    expect(doc.servers).toEqual([{ url: 'https://remit.test', description: expect.any(String) }]);
  });

  it('documents the storage download’s wildcard as a `key` path parameter', () => {
    expect(Object.keys(doc.paths).filter((path) => path.includes('*'))).toEqual([]);
    const download = doc.paths['/storage/{bucket}/{key}']!.get!;
    const inPath = download.parameters!.filter((x) => x.in === 'path');
    expect(inPath.map((x) => x.name)).toEqual(['bucket', 'key']);
  });
});

/** The `code` values an error answer allows (`ErrorBody` with `code` narrowed to an enum). */
function codesOf(op: Operation, status: string): string[] {
  const schema = resolved(op.responses[status]!).content?.['application/json']?.schema as
    { allOf?: [{ $ref?: string }, { properties?: { code?: { enum?: string[] } } }] } | undefined;
  if (schema?.allOf?.[0]?.$ref !== '#/components/schemas/ErrorBody') return [];
  return schema.allOf[1]?.properties?.code?.enum ?? [];
}

/** The response as documented, its shared component when it is a reference. */
const resolved = (response: Response): Response =>
  response.$ref ? doc.components.responses[response.$ref.split('/').pop()!]! : response;
const headersOf = (op: Operation, status: string) =>
  Object.keys(resolved(op.responses[status]!).headers ?? {});
const parametersOf = (op: Operation) =>
  (op.parameters ?? []).map((x) =>
    x.$ref ? doc.components.parameters[x.$ref.split('/').pop()!]!.name : x.name,
  );
const RATE_LIMIT = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

describe('the OpenAPI document’s headers', () => {
  it('every reference to a shared header, parameter or response resolves', () => {
    const refs = [
      ...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/(headers|parameters|responses)\/([^"]+)"/g),
    ];
    expect(refs.length).toBeGreaterThan(1000);
    const missing = refs.filter(([, kind, name]) => !(doc.components[kind as 'headers'] ?? {})[name!]);
    expect(missing.map(([ref]) => ref)).toEqual([]);
  });

  it('X-Request-Id on every operation’s request and every response', () => {
    const bad: string[] = [];
    for (const { name, op } of operations) {
      if (!parametersOf(op).includes('X-Request-Id')) bad.push(`${name} request`);
      for (const status of Object.keys(op.responses)) {
        if (!headersOf(op, status).includes('X-Request-Id')) bad.push(`${name} ${status}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('RateLimit-* on every response of every route that is not public, and on none of a public one', () => {
    const bad: string[] = [];
    for (const { name, op } of operations) {
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      for (const status of Object.keys(op.responses)) {
        const has = RATE_LIMIT.every((h) => headersOf(op, status).includes(h));
        const none = RATE_LIMIT.every((h) => !headersOf(op, status).includes(h));
        if (isPublic ? !none : !has) bad.push(`${name} ${status}`);
      }
    }
    expect(bad).toEqual([]);
    // The public routes say so, the system ones included.
    for (const path of ['/healthz', '/readyz', '/api/openapi.json'])
      expect(doc.paths[path]!.get!.security).toEqual([]);
    expect(doc.paths['/api/auth/sign-in']!.post!.security).toEqual([]);
  });

  it('every scoped operation names its scope under bearerAuth; the others the document-wide credentials or none', () => {
    const scopes = new Map(
      t.app.routeList.map((r) => [`${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`, r.scope]),
    );
    const bad: string[] = [];
    for (const { name, op } of operations) {
      if (!name.includes(' /api/')) continue;
      const scope = scopes.get(name);
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      if (scope) {
        const expected = [{ bearerAuth: [scope] }, { sessionCookie: [] }];
        if (JSON.stringify(op.security) !== JSON.stringify(expected))
          bad.push(`${name}: ${JSON.stringify(op.security)}`);
      } else if (!isPublic && op.security !== undefined && !name.includes(' /api/invitations/')) {
        // (The invitation routes take credentials optionally, and list so themselves.)
        bad.push(`${name} (no scope): ${JSON.stringify(op.security)}`);
      }
    }
    expect(bad).toEqual([]);
    expect(doc.paths['/api/organization/{organization_uid}/settings']!.patch!.security).toEqual([
      { bearerAuth: ['organization:write'] },
      { sessionCookie: [] },
    ]);
    expect(doc.paths['/api/organization/{organization_uid}/settings']!.get!.security).toEqual([
      { bearerAuth: ['organization:read'] },
      { sessionCookie: [] },
    ]);
  });

  it('Retry-After on every 429', () => {
    const with429 = operations.filter(({ op }) => op.responses['429']);
    expect(with429.length).toBeGreaterThan(90);
    expect(
      with429.filter(({ op }) => !headersOf(op, '429').includes('Retry-After')).map((o) => o.name),
    ).toEqual([]);
  });

  // A person's own session routes (sign-out, password, TOTP…) ignore the key: nothing is replayed.
  const KEYLESS = [
    'signOut',
    'revokeAllSessions',
    'changePassword',
    'setUpTotp',
    'enableTotp',
    'disableTotp',
  ];

  it('Idempotency-Key on every POST that is not public, and nowhere else', () => {
    const bad = operations.filter(({ name, op }) => {
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      const keyless = KEYLESS.includes(op.operationId!);
      return (
        parametersOf(op).includes('Idempotency-Key') !== (name.startsWith('POST ') && !isPublic && !keyless)
      );
    });
    expect(bad.map((o) => o.name)).toEqual([]);
    const signOut = operations.find(({ op }) => op.operationId === 'signOut')!.op;
    expect(parametersOf(signOut)).not.toContain('Idempotency-Key');
    expect(JSON.stringify(signOut.responses)).not.toMatch(/Idempotent|idempotency_key/i);
    expect(parametersOf(doc.paths['/api/invoices']!.post!)).toContain('Idempotency-Key');
    expect(headersOf(doc.paths['/api/invoices']!.post!, '422')).toContain('Original-Request');
  });

  it('Location and ETag on the storage upload’s success answers', () => {
    const upload = doc.paths['/storage/{bucket}']!.post!;
    for (const status of ['200', '201', '204'])
      expect(headersOf(upload, status)).toEqual(expect.arrayContaining(['Location', 'ETag']));
  });

  it('what it documents is what the server sends', async () => {
    const listed = await call(t.app, 'GET', '/api/parties', { key: p.orgA.member.key });
    expect(listed.status).toBe(200);
    for (const header of ['X-Request-Id', ...RATE_LIMIT])
      expect(listed.headers).toHaveProperty(header.toLowerCase());
    const health = await call(t.app, 'GET', '/healthz');
    expect(health.headers).toHaveProperty('x-request-id');
    expect(health.headers).not.toHaveProperty('ratelimit-limit');
  });
});

describe('the OpenAPI document’s schemas', () => {
  /** Every object in the document, with where it is. */
  function* objects(node: unknown, where: string): Generator<[string, Record<string, unknown>]> {
    if (!node || typeof node !== 'object') return;
    if (!Array.isArray(node)) yield [where, node as Record<string, unknown>];
    for (const [key, value] of Object.entries(node)) yield* objects(value, `${where}/${key}`);
  }

  it('gives every formatted value a type (a branch with only a format is `unknown` to type generators)', () => {
    const untyped = [...objects(doc, '#')]
      .filter(([, schema]) => typeof schema.format === 'string' && schema.type === undefined)
      .map(([where]) => where);
    expect(untyped).toEqual([]);
  });

  it('types the invoice dates as strings of date or date-time', () => {
    const body = doc.components.schemas.CreateInvoiceBody as { properties: Record<string, unknown> };
    expect(JSON.stringify(body.properties.due_date)).toContain(
      '[{"type":"string","format":"date"},{"type":"string","format":"date-time"}]',
    );
  });

  it('names every JSON request body as a component schema, <OperationId>Body', () => {
    const bodies = operations.filter(({ op }) => op.requestBody?.content['application/json']);
    expect(bodies.length).toBeGreaterThan(40);
    const unnamed = bodies.filter(({ op }) => {
      const ref = op.requestBody!.content['application/json']!.schema?.$ref as string | undefined;
      const name = `${op.operationId!.charAt(0).toUpperCase()}${op.operationId!.slice(1)}Body`;
      return ref !== `#/components/schemas/${name}` || !doc.components.schemas[name];
    });
    expect(unnamed.map((o) => o.name)).toEqual([]);
  });
});

describe('the OpenAPI document’s error answers (the registry of error codes)', () => {
  it('answers an operation with its statuses and codes only: GET /api/parties/{uid}', () => {
    const op = doc.paths['/api/parties/{uid}']!.get!;
    expect(Object.keys(op.responses)).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '414',
      '429',
      '500',
      '503',
    ]);
    expect(codesOf(op, '404')).toEqual(['not_found']);
    expect(codesOf(op, '403')).toEqual(['not_a_member', 'missing_scope', 'second_factor_required']);
    expect(codesOf(op, '400')).toEqual(['bad_request', 'invalid_parameter', 'unknown_parameter']);
    expect(resolved(op.responses['404']!).description).toContain('`not_found`: no such resource');
  });

  it('adds what a route declares: PUT /api/invoices/{uid} talks to the billing partner', () => {
    const update = doc.paths['/api/invoices/{uid}']!.put!;
    expect(codesOf(update, '409')).toEqual([
      'conflict',
      'already_exists',
      'invalid_state',
      'sync_in_progress',
      'invalid_transition',
      'party_archived',
    ]);
    expect(codesOf(update, '502')).toEqual(['bad_gateway']);
    expect(codesOf(update, '504')).toEqual(['gateway_timeout']);
    const get = doc.paths['/api/invoices/{uid}']!.get!;
    expect(Object.keys(get.responses)).not.toEqual(expect.arrayContaining(['409']));
    expect(Object.keys(get.responses)).not.toEqual(expect.arrayContaining(['502']));
  });

  it('gives every error answer of every operation codes of exactly its status, each described', () => {
    const problems: string[] = [];
    let answers = 0;
    for (const { name, op } of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (!/^[45]/.test(status)) continue;
        const content = resolved(response).content ?? {};
        // The embedded store's own S3 XML errors are the only error bodies that are not ErrorBody.
        if (!content['application/json']) {
          if (!name.includes(' /storage/')) problems.push(`${name} ${status}: not the error body`);
          continue;
        }
        answers += 1;
        const codes = codesOf(op, status);
        if (codes.length === 0) problems.push(`${name} ${status}: no codes`);
        for (const code of codes) {
          if (String(ERROR_CODES[code as ErrorCode]) !== status) problems.push(`${name} ${status}: ${code}`);
          if (!resolved(response).description?.includes(`\`${code}\``))
            problems.push(`${name} ${status}: ${code} not described`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(answers).toBeGreaterThan(600);
  });

  it('derives each route’s codes from its kind and its own declaration', () => {
    const always = ['internal_error', 'service_unavailable'];
    expect(errorCodesOf({ method: 'GET', url: '/healthz', config: { public: true } })).toEqual(always);
    expect(errorCodesOf({ method: 'GET', url: '/api/me' })).toEqual([
      'invalid_parameter',
      'unknown_parameter',
      'unauthorized',
      'not_a_member',
      'rate_limited',
      ...always,
    ]);
    const create = errorCodesOf({
      method: 'POST',
      url: '/api/things',
      schema: { body: {} },
      config: { scope: 'invoices:write', errors: ['already_exists'] },
    });
    expect(create).toEqual([
      'bad_request',
      'invalid_json',
      'invalid_parameter',
      'unknown_parameter',
      'unauthorized',
      'not_a_member',
      'missing_scope',
      'csrf_failed',
      'second_factor_required',
      'already_exists',
      'idempotency_key_in_use',
      'payload_too_large',
      'unsupported_media_type',
      'validation_failed',
      'idempotency_key_reused',
      'rate_limited',
      'internal_error',
      'storage_full',
      'service_unavailable',
    ]);
    expect(
      errorCodesOf({ method: 'GET', url: '/api/things/:uid', config: { scope: 'invoices:read' } }),
    ).toContain('uri_too_long');
    // The store's upload answers every error itself (S3 XML): only the router's refusals are JSON.
    expect(
      errorCodesOf({
        method: 'POST',
        url: '/storage/:bucket',
        config: { public: true },
        errorHandler: () => {},
      }),
    ).toEqual(['bad_request', 'uri_too_long']);
  });

  it('the end-of-run check reports each code a route answered but does not declare', () => {
    const record = (status: number, code: string | null) => ({
      kind: 'error' as const,
      route: 'GET /api/parties/:uid',
      operationId: 'getParty',
      status,
      code,
      declared: ['not_found', 'unauthorized'],
    });
    expect(undeclaredErrors([record(404, 'not_found'), record(401, 'unauthorized')])).toEqual([]);
    expect(
      undeclaredErrors([record(409, 'invalid_state'), record(400, 'not_found'), record(500, null)]),
    ).toEqual([
      'GET /api/parties/:uid (getParty): 400 not_found',
      'GET /api/parties/:uid (getParty): 409 invalid_state',
      'GET /api/parties/:uid (getParty): 500 (no error code in the body)',
    ]);
  });
});

describe('the OpenAPI document’s examples (recorded from the tests, docs/openapi-examples.json)', () => {
  const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
  /** Where a schema is in the document, as a JSON pointer the validator resolves. */
  const pointer = (...segments: string[]) =>
    `openapi.json#/${segments.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;

  it('every example validates against its operation’s schema, and most operations have one', () => {
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    ajv.addFormat('binary', true);
    ajv.addSchema(doc as object, 'openapi.json');
    const problems: string[] = [];
    let withExample = 0;
    const check = (name: string, where: string[], media: Media | undefined) => {
      const example = media?.examples?.fromTests;
      if (!example) return false;
      const validate = ajv.getSchema(pointer(...where, 'schema'))!;
      if (!validate(example.value))
        problems.push(`${name} ${where.at(-3)}: ${ajv.errorsText(validate.errors)}`);
      return true;
    };
    for (const { name, path, method, op } of operations) {
      let has = false;
      const body = op.requestBody?.content['application/json'];
      if (check(name, ['paths', path, method, 'requestBody', 'content', 'application/json'], body))
        has = true;
      for (const [status, response] of Object.entries(op.responses)) {
        if (response.$ref) continue;
        const media = response.content?.['application/json'];
        if (check(name, ['paths', path, method, 'responses', status, 'content', 'application/json'], media))
          has = true;
      }
      if (has) withExample += 1;
    }
    expect(problems).toEqual([]);
    expect(withExample).toBeGreaterThanOrEqual(100);
  });

  it('no example holds a secret', () => {
    const text = JSON.stringify(operations.map(({ op }) => [op.requestBody, ...Object.values(op.responses)]));
    expect(text.match(/rk_live_(?!EXAMPLE|…|\.\.\.)[A-Za-z0-9]{8,}/g)).toBeNull();
    expect(text.match(/X-Amz-Signature=(?!EXAMPLE)/g)).toBeNull();
    expect(text.match(/whsec_(?!RVhBTVBMRU)[A-Za-z0-9+/=]{8,}/g)).toBeNull();
  });

  it('replaces secrets by placeholders of the same shape before they are written', () => {
    expect(
      sanitized({
        password: 'Tr0ub4dor&3 horse',
        data: { key: 'rk_live_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90', key_snippet: 'rk_live_...St90' },
        secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0',
        smtp_url: 'smtp://mailer:hunter2@smtp.example.com:587',
        presigned_url: 'https://s3.test/b/k?X-Amz-Credential=AKIA%2F20260101&X-Amz-Signature=abc123',
        name: 'Acme',
      }),
    ).toEqual({
      password: 'Xx0xx0xxx&0 xxxxx',
      data: { key: 'rk_live_EXAMPLE0000000000000000000000000000000000', key_snippet: 'rk_live_...St90' },
      secret: 'whsec_RVhBTVBMRUVYQU1QTEVFWEFNUExFRVhBTVBMRQ==',
      smtp_url: 'smtp://mailer:EXAMPLE@smtp.example.com:587',
      presigned_url: 'https://s3.test/b/k?X-Amz-Credential=EXAMPLE&X-Amz-Signature=EXAMPLE',
      name: 'Acme',
    });
  });
});
