/**
 * Documents (CONTRACT §4): multipart upload of real files of each knowledge type into the same object
 * storage, SHA-256 and size recorded, a presigned download that serves the same bytes, GET by uid,
 * `invoice.document_uid` pointing at one, limits, idempotency and tenancy.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_BYTES } from '../../src/modules/documents/documents.schemas.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { CONTENT_TYPES, sampleFile, type SampleKind } from '../helpers/sample-files.ts';

let t: TestApp;
let p: Principals;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

type Part = string | { content: Buffer; filename: string; type?: string };

/** A multipart/form-data body encoded by the platform's own FormData. */
async function formData(parts: [string, Part][]) {
  const form = new FormData();
  for (const [name, part] of parts) {
    if (typeof part === 'string') form.append(name, part);
    else
      form.append(
        name,
        new Blob([new Uint8Array(part.content)], part.type ? { type: part.type } : {}),
        part.filename,
      );
  }
  const request = new Request('http://form.test/', { method: 'POST', body: form });
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    contentType: request.headers.get('content-type')!,
  };
}

async function upload(
  parts: [string, Part][],
  options: { key?: string; headers?: Record<string, string> } = {},
) {
  const body = await formData(parts);
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/documents',
    headers: {
      authorization: `Bearer ${options.key ?? p.orgA.admin.key}`,
      'content-type': body.contentType,
      ...options.headers,
    },
    payload: body.payload,
  });
  return {
    status: res.statusCode,
    body: res.body ? JSON.parse(res.body) : undefined,
    headers: res.headers,
    raw: res.body,
  };
}

const fileOf = (kind: SampleKind, filename = `sample.${kind}`) => ({
  content: sampleFile(kind, `Document text ${kind}`),
  filename,
  type: CONTENT_TYPES[kind],
});

/** Every object file in the embedded bucket. */
function storedFiles(): string[] {
  const root = path.join(t.config.dataDir, 'objects', t.deps.objectStorage.bucket);
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((f) => fs.statSync(path.join(root, f)).isFile())
    .map((f) => f.split(path.sep).join('/'));
}

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

describe('POST /api/documents', () => {
  for (const kind of Object.keys(CONTENT_TYPES) as SampleKind[]) {
    it(`${kind}: 201 with the document, its size and SHA-256; the presigned_url serves the same bytes`, async () => {
      const file = fileOf(kind);
      const res = await upload([
        ['document_name', `Contract (${kind})`],
        ['file', file],
      ]);
      expect(res.status, res.raw).toBe(201);
      expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
      const d = res.body.data;
      expect(Object.keys(d).sort()).toEqual(
        [
          'uid',
          'organization_uid',
          'filename',
          'document_name',
          'content_type',
          'file_size',
          'sha256',
          'uploaded_by_uid',
          'created_at',
          'updated_at',
          'presigned_url',
        ].sort(),
      );
      expect(d).toMatchObject({
        organization_uid: p.orgA.uid,
        filename: `sample.${kind}`,
        document_name: `Contract (${kind})`,
        content_type: CONTENT_TYPES[kind],
        file_size: file.content.length,
        sha256: sha256(file.content),
        uploaded_by_uid: p.orgA.admin.userUid,
      });
      expect(d.uid).toMatch(UUID);
      expect(storedFiles()).toContain(`${p.orgA.uid}/documents/${d.uid}/sample.${kind}`);
      const url = new URL(d.presigned_url);
      const download = await t.app.inject({
        method: 'GET',
        url: url.pathname + url.search,
        headers: { host: url.host },
      });
      expect(download.statusCode).toBe(200);
      expect(download.headers['content-type']).toBe(CONTENT_TYPES[kind]);
      expect(download.rawPayload.equals(file.content)).toBe(true);
    });
  }

  it('document_name defaults to the file name; a member may upload', async () => {
    const res = await upload([['file', fileOf('pdf', 'Signed contract.pdf')]], { key: p.orgA.member.key });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      filename: 'Signed contract.pdf',
      document_name: 'Signed contract.pdf',
    });
    expect(res.body.data.uploaded_by_uid).toBe(p.orgA.member.userUid);
  });

  it("organization_uid names the organization: one of the caller's → stored there; another → 403, nothing stored", async () => {
    const own = await upload([
      ['organization_uid', p.orgA.uid],
      ['file', fileOf('png')],
    ]);
    expect(own.status).toBe(201);
    const before = storedFiles().length;
    const res = await upload([
      ['organization_uid', p.orgB.uid],
      ['file', fileOf('png')],
    ]);
    expectErrorBody(res, 403, 'not_a_member');
    expect(storedFiles().length).toBe(before);
  });

  it('over 25 MB → 413 and nothing stored; no file, or file as a text field → 422; not multipart → 415', async () => {
    const before = storedFiles().length;
    const big = await upload([
      ['file', { content: Buffer.alloc(MAX_DOCUMENT_BYTES + 1), filename: 'big.pdf' }],
    ]);
    expectErrorBody(big, 413, 'payload_too_large');
    expectErrorBody(await upload([['document_name', 'x']]), 422, 'validation_failed');
    expectErrorBody(await upload([['file', 'not a file']]), 422, 'validation_failed');
    expectErrorBody(
      await upload([
        ['file', fileOf('pdf')],
        ['unknown', 'x'],
      ]),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await call(t.app, 'POST', '/api/documents', { key: p.orgA.admin.key, body: { document_name: 'x' } }),
      415,
    );
    expect(storedFiles().length).toBe(before);
  });

  it('Idempotency-Key: the same file replays the first answer; another file with the same key → 422', async () => {
    const headers = { 'idempotency-key': `doc-${crypto.randomUUID()}` };
    const first = await upload([['file', fileOf('docx')]], { headers });
    const again = await upload([['file', fileOf('docx')]], { headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.data.uid).toBe(first.body.data.uid);
    expectErrorBody(await upload([['file', fileOf('xlsx')]], { headers }), 422, 'idempotency_key_reused');
  });
});

describe('GET /api/documents/{uid}', () => {
  it("200 with the document and a fresh presigned_url; another organization's → 404", async () => {
    const created = (await upload([['file', fileOf('xlsx')]])).body.data;
    const res = await call(t.app, 'GET', `/api/documents/${created.uid}`, { key: p.orgA.admin.key });
    expect(res.status).toBe(200);
    const { presigned_url: _url, ...rest } = res.body.data;
    const { presigned_url: _created, ...expected } = created;
    expect(rest).toEqual(expected);
    expect(res.body.data.presigned_url).toContain('X-Amz-Signature=');
    expectErrorBody(
      await call(t.app, 'GET', `/api/documents/${created.uid}`, { key: p.orgB.admin.key }),
      404,
    );
    expectErrorBody(
      await call(t.app, 'GET', `/api/documents/${crypto.randomUUID()}`, { key: p.orgA.admin.key }),
      404,
    );
    expectErrorBody(await call(t.app, 'GET', '/api/documents/nope', { key: p.orgA.admin.key }), 400);
  });

  it("is what an invoice's document_uid points at", async () => {
    const document = (await upload([['file', fileOf('pdf', 'INV-DOC-1.pdf')]])).body.data;
    const invoice = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgA.admin.key,
      body: {
        invoice_type: 'ACCOUNTS_PAYABLE',
        invoice_number: `DOC-${crypto.randomBytes(3).toString('hex')}`,
        currency: 'USD',
        document_uid: document.uid,
      },
    });
    expect(invoice.status, invoice.raw).toBe(201);
    const linked = invoice.body.data.document_uid as string;
    expect(linked).toBe(document.uid);
    const res = await call(t.app, 'GET', `/api/documents/${linked}`, { key: p.orgA.admin.key });
    expect(res.body.data.filename).toBe('INV-DOC-1.pdf');
  });
});

const env = () => ({ t, p });
commonRouteChecks(
  'POST /api/documents',
  { method: 'POST', url: () => '/api/documents', body: () => ({}), scope: 'knowledge:write' },
  env,
);
commonRouteChecks(
  'GET /api/documents/{uid}',
  {
    method: 'GET',
    url: async ({ p }) =>
      `/api/documents/${(await upload([['file', fileOf('png')]], { key: p.orgA.admin.key })).body.data.uid}`,
    scope: 'knowledge:write',
    foreignUrl: async ({ p }) =>
      `/api/documents/${(await upload([['file', fileOf('png')]], { key: p.orgB.admin.key })).body.data.uid}`,
  },
  env,
);
