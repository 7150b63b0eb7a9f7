import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';

// The OpenAPI document as clients and generators read it (issue 19, docs/openapi.md): every operation
// named, summarised and tagged. Redocly's `recommended` rules run over the same document in `npm run lint`.

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
}
type Doc = {
  servers?: { url: string; description?: string }[];
  paths: Record<string, Record<string, Operation & { parameters?: { name: string; in: string }[] }>>;
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

let t: TestApp;
let doc: Doc;
let operations: { name: string; op: Operation }[];

beforeAll(async () => {
  t = await createTestApp({ env: { PUBLIC_BASE_URL: 'https://remit.test/ignored/path/' } });
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
    expect(download.parameters!.map((p) => `${p.in} ${p.name}`)).toEqual(['path bucket', 'path key']);
  });
});
