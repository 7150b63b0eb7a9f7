import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

// The OpenAPI document as clients and generators read it (issue 19, docs/openapi.md): every operation
// named, summarised and tagged. Redocly's `recommended` rules run over the same document in `npm run lint`.

interface Response {
  $ref?: string;
  headers?: Record<string, { $ref?: string }>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name?: string; in?: string; $ref?: string }[];
  responses: Record<string, Response>;
}
type Doc = {
  tags?: { name: string; description?: string }[];
  servers?: { url: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    headers: Record<string, unknown>;
    parameters: Record<string, { name: string; in: string }>;
    responses: Record<string, Response>;
  };
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

let t: TestApp;
let p: Principals;
let doc: Doc;
let operations: { name: string; op: Operation }[];

beforeAll(async () => {
  t = await createTestApp({ env: { PUBLIC_BASE_URL: 'https://remit.test/ignored/path/' } });
  p = await createPrincipals(t);
  const res = await call(t.app, 'GET', '/api/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body as Doc;
  operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
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

  it('documents the one failure of GET /api/openapi.json, an unknown query parameter', async () => {
    expect(Object.keys(doc.paths['/api/openapi.json']!.get!.responses)).toEqual(['200', '400']);
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

  it('Retry-After on every 429', () => {
    const with429 = operations.filter(({ op }) => op.responses['429']);
    expect(with429.length).toBeGreaterThan(90);
    expect(
      with429.filter(({ op }) => !headersOf(op, '429').includes('Retry-After')).map((o) => o.name),
    ).toEqual([]);
  });

  it('Idempotency-Key on every POST that is not public, and nowhere else', () => {
    const bad = operations.filter(({ name, op }) => {
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      return parametersOf(op).includes('Idempotency-Key') !== (name.startsWith('POST ') && !isPublic);
    });
    expect(bad.map((o) => o.name)).toEqual([]);
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
    const body = (
      doc.paths['/api/invoices']!.post as unknown as {
        requestBody: { content: Record<string, { schema: { properties: Record<string, unknown> } }> };
      }
    ).requestBody.content['application/json']!.schema.properties;
    expect(JSON.stringify(body.due_date)).toContain(
      '[{"type":"string","format":"date"},{"type":"string","format":"date-time"}]',
    );
  });
});
