/**
 * Invoice attachments (interface §2.13, §4.7, §8; CONTRACT §4, §6): multipart upload, the presigned
 * download through the embedded S3-compatible endpoint, paging and `_links`, limits, idempotency,
 * tenancy, and no orphaned object when the row cannot be written.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { authenticate } from '../../src/modules/api-keys/api-keys.service.ts';
import * as attachments from '../../src/modules/invoices/attachments.service.ts';
import { MAX_ATTACHMENT_BYTES } from '../../src/modules/invoices/attachments.schemas.ts';
import { contextFor } from '../../src/platform/http/context.ts';
import type { ObjectStorage } from '../../src/platform/storage/storage.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let adminId: number;
let invoiceA: string;
let invoiceB: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Every byte value, twice, and some random ones: what comes back must be exactly this. */
const BINARY = Buffer.concat([
  Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
  Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i)),
  crypto.randomBytes(4096),
]);

type Part = string | { content: Buffer; filename: string; type?: string };

/** A multipart/form-data body, encoded by the platform's own FormData (a fresh boundary each time). */
async function formData(parts: [string, Part][]) {
  const form = new FormData();
  for (const [name, part] of parts) {
    if (typeof part === 'string') form.append(name, part);
    else {
      const blob = new Blob([new Uint8Array(part.content)], part.type ? { type: part.type } : {});
      form.append(name, blob, part.filename);
    }
  }
  const request = new Request('http://form.test/', { method: 'POST', body: form });
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    contentType: request.headers.get('content-type')!,
  };
}

async function upload(
  invoiceUid: string,
  parts: [string, Part][],
  options: { key?: string; headers?: Record<string, string> } = {},
) {
  const body = await formData(parts);
  const res = await t.app.inject({
    method: 'POST',
    url: `/api/invoices/${invoiceUid}/attachments`,
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

const pdf = (content: Buffer = BINARY, filename = 'invoice.pdf') => ({
  content,
  filename,
  type: 'application/pdf',
});

/** GET of a presigned URL through the app, with the Host header the URL was signed for. */
function download(url: string, options: { host?: string; method?: 'GET' | 'HEAD' } = {}) {
  const u = new URL(url);
  return t.app.inject({
    method: options.method ?? 'GET',
    url: u.pathname + u.search,
    headers: { host: options.host ?? u.host },
  });
}

async function newInvoice(key: string, number = `INV-${crypto.randomBytes(4).toString('hex')}`) {
  const res = await call(t.app, 'POST', '/api/invoices', {
    key,
    body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: number, currency: 'USD' },
  });
  expect(res.status).toBe(201);
  return res.body.data.uid as string;
}

async function rowsOf(invoiceUid: string) {
  const result = await t.db.execute(
    sql`select uid, storage_key, file_size::int as file_size from invoice_attachments where invoice_uid = ${invoiceUid}`,
  );
  return (result as unknown as { rows: { uid: string; storage_key: string; file_size: number }[] }).rows;
}

/** Every object file in the embedded bucket (not the sidecars or temporary files). */
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
  adminId = (await call(t.app, 'GET', '/api/me', { key: p.orgA.admin.key })).body.data.user.id;
  invoiceA = await newInvoice(p.orgA.admin.key);
  invoiceB = await newInvoice(p.orgB.admin.key);
});
afterAll(async () => t?.close());

describe('POST /api/invoices/{uid}/attachments', () => {
  it('201 with the attachment of interface 2.13, and its presigned_url serves exactly the bytes', async () => {
    const before = Date.now();
    const res = await upload(invoiceA, [
      ['description', 'Signed copy'],
      ['file', pdf()],
      ['is_public', 'true'],
    ]);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    const a = res.body.data;
    expect(Object.keys(a).sort()).toEqual(
      [
        'uid',
        'filename',
        'content_type',
        'file_size',
        'uploaded_by',
        'created_on',
        'description',
        'is_public',
        'invoice_uid',
        'presigned_url',
      ].sort(),
    );
    expect(a).toMatchObject({
      filename: 'invoice.pdf',
      content_type: 'application/pdf',
      file_size: BINARY.length,
      uploaded_by: adminId,
      description: 'Signed copy',
      is_public: true,
      invoice_uid: invoiceA,
    });
    expect(a.uid).toMatch(UUID);
    expect(Number.isInteger(a.uploaded_by)).toBe(true);
    // Created while the request ran.
    expect(Date.parse(a.created_on)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(a.created_on)).toBeLessThanOrEqual(Date.now());

    const url = new URL(a.presigned_url);
    expect(url.origin).toBe(t.config.publicBaseUrl);
    expect(url.pathname).toBe(`/storage/remit/${p.orgA.uid}/invoices/${invoiceA}/${a.uid}/invoice.pdf`);
    for (const name of [
      'X-Amz-Algorithm',
      'X-Amz-Credential',
      'X-Amz-Date',
      'X-Amz-Expires',
      'X-Amz-Signature',
    ]) {
      expect(url.searchParams.get(name)).toBeTruthy();
    }
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');

    const got = await download(a.presigned_url);
    expect(got.statusCode).toBe(200);
    expect(got.rawPayload.equals(BINARY)).toBe(true);
    expect(got.headers['content-type']).toBe('application/pdf');
    expect(got.headers['content-length']).toBe(String(BINARY.length));
    expect(got.headers['content-disposition']).toContain('attachment; filename="invoice.pdf"');
    expect(got.headers['x-content-type-options']).toBe('nosniff');

    const [row] = (await rowsOf(invoiceA)).filter((r) => r.uid === a.uid);
    expect(row!.storage_key).toBe(`${p.orgA.uid}/invoices/${invoiceA}/${a.uid}/invoice.pdf`);
    expect(row!.file_size).toBe(BINARY.length);
  });

  it('defaults: description empty, is_public false; the part type is the content type', async () => {
    const res = await upload(invoiceA, [
      ['file', { content: Buffer.from('a,b\n1,2\n'), filename: 'data.csv', type: 'text/csv' }],
    ]);
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      description: '',
      is_public: false,
      content_type: 'text/csv',
      file_size: 8,
    });
    const got = await download(res.body.data.presigned_url);
    expect(got.headers['content-type']).toBe('text/csv');
    expect(got.body).toBe('a,b\n1,2\n');
  });

  it('keeps the file name as sent (without directories) and makes the storage key safe', async () => {
    const res = await upload(invoiceA, [
      ['file', pdf(Buffer.from('x'), '../../Été rapport "final" (1).pdf')],
    ]);
    expect(res.status).toBe(201);
    const a = res.body.data;
    expect(a.filename).toBe('Été rapport "final" (1).pdf');
    const url = new URL(a.presigned_url);
    expect(url.pathname.endsWith(`/${a.uid}/Ete_rapport_final_1_.pdf`)).toBe(true);
    const got = await download(a.presigned_url);
    expect(got.statusCode).toBe(200);
    expect(got.headers['content-disposition']).toBe(
      `attachment; filename="Ete rapport _final_ (1).pdf"; filename*=UTF-8''${encodeURIComponent('Été rapport "final" (1).pdf').replace(/[()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`,
    );
  });

  it('accepts an empty file', async () => {
    const res = await upload(invoiceA, [
      ['file', { content: Buffer.alloc(0), filename: 'empty.txt', type: 'text/plain' }],
    ]);
    expect(res.status).toBe(201);
    expect(res.body.data.file_size).toBe(0);
    const got = await download(res.body.data.presigned_url);
    expect(got.statusCode).toBe(200);
    expect(got.rawPayload.length).toBe(0);
  });

  it('413 for a file over 25 MB, and nothing is stored', async () => {
    const invoice = await newInvoice(p.orgA.admin.key);
    const before = storedFiles().length;
    const res = await upload(invoice, [['file', pdf(Buffer.alloc(MAX_ATTACHMENT_BYTES + 1, 7), 'big.pdf')]]);
    expectErrorBody({ ...res, raw: res.raw }, 413, 'payload_too_large');
    expect(res.body.message).toContain('25 MB');
    expect(await rowsOf(invoice)).toHaveLength(0);
    expect(storedFiles().length).toBe(before);
    // Exactly the limit is fine.
    const ok = await upload(invoice, [['file', pdf(Buffer.alloc(MAX_ATTACHMENT_BYTES, 7), 'limit.pdf')]]);
    expect(ok.status).toBe(201);
    expect(ok.body.data.file_size).toBe(MAX_ATTACHMENT_BYTES);
  });

  it('422 without a file, for a text field named file, an unknown field, a bad is_public, a long description', async () => {
    const check = async (parts: [string, Part][], field: string) => {
      const res = await upload(invoiceA, parts);
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.map((e) => e.field)).toContain(field);
    };
    await check([['description', 'no file']], 'file');
    await check([['file', 'just text']], 'file');
    await check(
      [
        ['file', pdf()],
        ['colour', 'red'],
      ],
      'colour',
    );
    await check(
      [
        ['file', pdf()],
        ['is_public', 'maybe'],
      ],
      'is_public',
    );
    await check(
      [
        ['file', pdf()],
        ['description', 'x'.repeat(2001)],
      ],
      'description',
    );
    await check(
      [
        ['file', pdf()],
        ['description', 'a'],
        ['description', 'b'],
      ],
      'description',
    );
    await check(
      [
        ['file', pdf()],
        ['file', pdf()],
      ],
      'file',
    );
    expect(
      (
        await upload(invoiceA, [
          ['file', pdf()],
          ['is_public', 'FALSE'],
        ])
      ).body.data.is_public,
    ).toBe(false);
  });

  it('415 for a JSON body; 400 for a malformed multipart body', async () => {
    const json = await call(t.app, 'POST', `/api/invoices/${invoiceA}/attachments`, {
      key: p.orgA.admin.key,
      body: { file: 'x' },
    });
    expectErrorBody(json, 415, 'unsupported_media_type');
    const broken = await t.app.inject({
      method: 'POST',
      url: `/api/invoices/${invoiceA}/attachments`,
      headers: {
        authorization: `Bearer ${p.orgA.admin.key}`,
        'content-type': 'multipart/form-data; boundary=abc',
      },
      payload: '--abc\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nunterminated',
    });
    expectErrorBody(
      { status: broken.statusCode, body: JSON.parse(broken.body), headers: broken.headers, raw: broken.body },
      400,
    );
  });

  it('400 for a malformed invoice uid; 404 for an unknown invoice', async () => {
    expectErrorBody(await upload('not-a-uuid', [['file', pdf()]]), 400, 'invalid_parameter');
    expectErrorBody(await upload(crypto.randomUUID(), [['file', pdf()]]), 404, 'not_found');
  });

  it("404 for another organization's invoice, and nothing is stored there", async () => {
    const before = storedFiles().length;
    expectErrorBody(await upload(invoiceB, [['file', pdf()]]), 404, 'not_found');
    expect(await rowsOf(invoiceB)).toHaveLength(0);
    expect(storedFiles().length).toBe(before);
  });

  it('a member may upload (invoices:write), uploaded_by is their id', async () => {
    const memberId = (await call(t.app, 'GET', '/api/me', { key: p.orgA.member.key })).body.data.user.id;
    // A member works on the invoices assigned to them (docs/authentication.md).
    const assign = await call(t.app, 'PUT', `/api/invoices/${invoiceA}`, {
      key: p.orgA.admin.key,
      body: { assignee_user_uids: [p.orgA.member.userUid] },
    });
    expect(assign.status, assign.raw).toBe(200);
    const res = await upload(invoiceA, [['file', pdf()]], { key: p.orgA.member.key });
    expect(res.status).toBe(201);
    expect(res.body.data.uploaded_by).toBe(memberId);
  });

  it('Idempotency-Key: a retry (new boundary) replays the first answer; another file with the key → 422', async () => {
    const invoice = await newInvoice(p.orgA.admin.key);
    const key = `att-${crypto.randomUUID()}`;
    const parts: [string, Part][] = [
      ['file', pdf()],
      ['description', 'once'],
    ];
    const first = await upload(invoice, parts, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    const again = await upload(invoice, parts, { headers: { 'idempotency-key': key } });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.uid).toBe(first.body.data.uid);
    expect(await rowsOf(invoice)).toHaveLength(1);

    const other = await upload(
      invoice,
      [
        ['file', pdf(Buffer.from('other bytes'))],
        ['description', 'once'],
      ],
      {
        headers: { 'idempotency-key': key },
      },
    );
    expectErrorBody(other, 422, 'idempotency_key_reused');
    const renamed = await upload(
      invoice,
      [
        ['file', pdf(BINARY, 'renamed.pdf')],
        ['description', 'once'],
      ],
      {
        headers: { 'idempotency-key': key },
      },
    );
    expectErrorBody(renamed, 422, 'idempotency_key_reused');
    expect(await rowsOf(invoice)).toHaveLength(1);
  });

  it('leaves no temporary upload files behind', async () => {
    const tmp = (await import('node:os')).tmpdir();
    const spooled = () => fs.readdirSync(tmp).filter((f) => f.startsWith('remit-upload-'));
    const before = new Set(spooled());
    await upload(invoiceA, [['file', pdf()]]);
    await upload(invoiceA, [
      ['file', pdf()],
      ['is_public', 'maybe'],
    ]);
    await upload(invoiceB, [['file', pdf()]]);
    // Removed in the handler, or by the onResponse hook, which may finish just after the response.
    await expect.poll(() => spooled().filter((f) => !before.has(f)), { timeout: 2000 }).toEqual([]);
  });

  it('deletes the stored object again when the row cannot be written (no orphan)', async () => {
    const invoice = await newInvoice(p.orgA.admin.key);
    const auth = await authenticate(t.database, t.config.apiKeyPepper, p.orgA.admin.key);
    if (!auth.ok) throw new Error('no principal');
    const ctx = contextFor(auth.principal, { requestId: 'test-request', clientAddress: null });
    const real = t.deps.objectStorage;
    const stored: string[] = [];
    // The invoice disappears between the object write and the row insert (a concurrent delete).
    const racing: ObjectStorage = Object.assign(Object.create(real) as ObjectStorage, {
      putObject: async (...args: Parameters<ObjectStorage['putObject']>) => {
        const result = await real.putObject(...args);
        stored.push(args[0]);
        await t.db.execute(sql`delete from invoices where uid = ${invoice}`);
        return result;
      },
    });
    const spool = path.join(t.config.dataDir, 'spool.bin');
    fs.writeFileSync(spool, BINARY);
    await expect(
      attachments.createAttachment({ db: t.db, storage: racing, urlExpiresS: 60 }, ctx, invoice, {
        path: spool,
        filename: 'race.pdf',
        contentType: 'application/pdf',
        size: BINARY.length,
        description: '',
        isPublic: false,
      }),
    ).rejects.toMatchObject({ statusCode: 404 });
    expect(stored).toHaveLength(1);
    expect(await real.headObject(stored[0]!)).toBeNull();
    expect(storedFiles().some((f) => f.includes(invoice))).toBe(false);
  });

  commonRouteChecks(
    'POST /api/invoices/{uid}/attachments',
    {
      method: 'POST',
      url: () => `/api/invoices/${invoiceA}/attachments`,
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${invoiceB}/attachments`,
    },
    () => ({ t, p }),
  );
});

describe('presigned download URLs (embedded S3-compatible endpoint)', () => {
  let attachment: { uid: string; presigned_url: string };
  let storageKey: string;

  beforeAll(async () => {
    const res = await upload(invoiceA, [['file', pdf(BINARY, 'signed.pdf')]]);
    attachment = res.body.data;
    storageKey = (await rowsOf(invoiceA)).find((r) => r.uid === attachment.uid)!.storage_key;
  });

  const xml = (res: { body: string }) => res.body;

  it('needs no API key and answers S3-style XML errors', async () => {
    const ok = await download(attachment.presigned_url);
    expect(ok.statusCode).toBe(200);
    const bare = await download(attachment.presigned_url.split('?')[0]!);
    expect(bare.statusCode).toBe(403);
    expect(bare.headers['content-type']).toContain('application/xml');
    expect(xml(bare)).toContain('<Code>AccessDenied</Code>');
  });

  it('403 SignatureDoesNotMatch when the path or any signed parameter is changed', async () => {
    const url = new URL(attachment.presigned_url);
    const tampered: string[] = [];
    const withPath = new URL(url);
    withPath.pathname = url.pathname.replace('signed.pdf', 'signed.pdX');
    tampered.push(withPath.toString());
    for (const name of [...url.searchParams.keys()]) {
      if (name === 'X-Amz-Signature') continue;
      const copy = new URL(url);
      const value = copy.searchParams.get(name)!;
      // A change that keeps the parameter well formed, so only the signature can catch it.
      const changed =
        name === 'X-Amz-Expires'
          ? String(Number(value) + 1)
          : name === 'X-Amz-Date'
            ? value.replace(/(\d)Z$/, (_, d: string) => `${(Number(d) + 1) % 10}Z`)
            : name === 'response-content-disposition'
              ? value.replace('signed.pdf', 'evil.html')
              : null;
      if (changed === null) continue;
      copy.searchParams.set(name, changed);
      tampered.push(copy.toString());
    }
    const extra = new URL(url);
    extra.searchParams.set('response-content-type', 'text/html');
    tampered.push(extra.toString());
    const sig = new URL(url);
    const s = sig.searchParams.get('X-Amz-Signature')!;
    sig.searchParams.set('X-Amz-Signature', (s[0] === 'a' ? 'b' : 'a') + s.slice(1));
    tampered.push(sig.toString());

    expect(tampered.length).toBeGreaterThanOrEqual(5);
    for (const address of tampered) {
      const res = await download(address, { host: url.host });
      expect(res.statusCode, address).toBe(403);
      expect(xml(res)).toContain('<Code>SignatureDoesNotMatch</Code>');
    }
  });

  it('403 for another Host header or another method than the one signed', async () => {
    const res = await download(attachment.presigned_url, { host: 'evil.test' });
    expect(res.statusCode).toBe(403);
    expect(xml(res)).toContain('SignatureDoesNotMatch');
    const head = await download(attachment.presigned_url, { method: 'HEAD' });
    expect(head.statusCode).toBe(403);
  });

  it('403 "Request has expired" after X-Amz-Expires', async () => {
    const url = await t.deps.objectStorage.presignedGetUrl(storageKey, {
      expiresInSeconds: 60,
      signingDate: new Date(Date.now() - 61_000),
    });
    const res = await download(url);
    expect(res.statusCode).toBe(403);
    expect(xml(res)).toContain('<Code>AccessDenied</Code><Message>Request has expired</Message>');
    const fresh = await t.deps.objectStorage.presignedGetUrl(storageKey, {
      expiresInSeconds: 60,
      signingDate: new Date(Date.now() - 50_000),
    });
    expect((await download(fresh)).statusCode).toBe(200);
  });

  it('a 1-second URL stops working once the clock has passed its second', async () => {
    const url = await t.deps.objectStorage.presignedGetUrl(storageKey, { expiresInSeconds: 1 });
    expect((await download(url)).statusCode).toBe(200);
    // The download route's clock, 2 s on (a fake clock: no waiting for the URL to expire).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2_000 });
    try {
      const res = await download(url);
      expect(res.statusCode).toBe(403);
      expect(xml(res)).toContain('Request has expired');
    } finally {
      vi.useRealTimers();
    }
  });

  it('404 NoSuchKey for a validly signed URL of a missing object', async () => {
    const url = await t.deps.objectStorage.presignedGetUrl(`${p.orgA.uid}/nothing/here.pdf`, {
      expiresInSeconds: 60,
    });
    const res = await download(url);
    expect(res.statusCode).toBe(404);
    expect(xml(res)).toContain('<Code>NoSuchKey</Code>');
  });

  it('is in the OpenAPI document, public, with a summary', async () => {
    const doc = (await call(t.app, 'GET', '/api/openapi.json')).body;
    const op = doc.paths['/storage/{bucket}/{key}']?.get;
    expect(op?.summary).toEqual(expect.any(String));
    expect(op.security).toEqual([]);
    const upload = doc.paths['/api/invoices/{uid}/attachments'].post;
    expect(Object.keys(upload.requestBody.content)).toEqual(['multipart/form-data']);
    expect(upload.requestBody.content['multipart/form-data'].schema.required).toEqual(['file']);
  });
});

describe('GET /api/invoices/{uid}/attachments', () => {
  let invoice: string;
  const uploaded: string[] = [];

  beforeAll(async () => {
    invoice = await newInvoice(p.orgA.admin.key);
    for (const name of ['one.pdf', 'two.pdf', 'three.pdf']) {
      const res = await upload(invoice, [['file', pdf(Buffer.from(name), name)]]);
      uploaded.push(res.body.data.uid);
    }
  });

  const list = (query: Record<string, string | number> = {}, key = p.orgA.admin.key, uid = invoice) =>
    call(t.app, 'GET', `/api/invoices/${uid}/attachments`, { key, query });

  it('lists newest first, 10 per page by default, with _meta and _links inside data', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    const { items, _meta, _links } = res.body.data;
    expect(items.map((a: { uid: string }) => a.uid)).toEqual([...uploaded].reverse());
    expect(items.map((a: { filename: string }) => a.filename)).toEqual(['three.pdf', 'two.pdf', 'one.pdf']);
    expect(_meta).toEqual({ page: 1, per_page: 10, total_pages: 1, total_items: 3 });
    expect(_links).toEqual({
      self: `${t.config.publicBaseUrl}/api/invoices/${invoice}/attachments?page=1&per_page=10`,
      next: null,
      prev: null,
    });
    for (const item of items) {
      const got = await download(item.presigned_url);
      expect(got.statusCode).toBe(200);
      expect(got.body).toBe(item.filename);
    }
  });

  it('pages with next and prev links', async () => {
    const first = (await list({ per_page: 2 })).body.data;
    expect(first.items).toHaveLength(2);
    expect(first._meta).toEqual({ page: 1, per_page: 2, total_pages: 2, total_items: 3 });
    expect(first._links.prev).toBeNull();
    expect(first._links.next).toBe(
      `${t.config.publicBaseUrl}/api/invoices/${invoice}/attachments?per_page=2&page=2`,
    );
    const nextUrl = new URL(first._links.next);
    const second = (await call(t.app, 'GET', nextUrl.pathname + nextUrl.search, { key: p.orgA.admin.key }))
      .body.data;
    expect(second.items.map((a: { uid: string }) => a.uid)).toEqual([uploaded[0]]);
    expect(second._links.next).toBeNull();
    expect(second._links.prev).toBe(
      `${t.config.publicBaseUrl}/api/invoices/${invoice}/attachments?per_page=2&page=1`,
    );
    const beyond = (await list({ per_page: 2, page: 5 })).body.data;
    expect(beyond.items).toEqual([]);
    expect(beyond._meta.page).toBe(5);
  });

  it('is stable when several attachments share a created_on', async () => {
    // An invoice of its own: the other tests here rely on the upload order of theirs.
    const own = await newInvoice(p.orgA.admin.key);
    const ownUploads: string[] = [];
    for (const name of ['one.pdf', 'two.pdf', 'three.pdf']) {
      ownUploads.push((await upload(own, [['file', pdf(Buffer.from(name), name)]])).body.data.uid);
    }
    await t.db.execute(
      sql`update invoice_attachments set created_on = '2026-01-01T00:00:00Z' where invoice_uid = ${own}`,
    );
    const listOwn = (query: Record<string, number>) => list(query, p.orgA.admin.key, own);
    const all = (await listOwn({ per_page: 100 })).body.data.items.map((a: { uid: string }) => a.uid);
    expect(all).toEqual([...ownUploads].sort().reverse());
    const paged = [
      ...(await listOwn({ per_page: 1, page: 1 })).body.data.items,
      ...(await listOwn({ per_page: 1, page: 2 })).body.data.items,
      ...(await listOwn({ per_page: 1, page: 3 })).body.data.items,
    ].map((a: { uid: string }) => a.uid);
    expect(paged).toEqual(all);
  });

  it('400 for per_page 0 or 101, page 0, or a bad uid', async () => {
    expectErrorBody(await list({ per_page: 0 }), 400, 'invalid_parameter');
    expectErrorBody(await list({ per_page: 101 }), 400, 'invalid_parameter');
    expectErrorBody(await list({ page: 0 }), 400, 'invalid_parameter');
    expectErrorBody(await list({}, p.orgA.admin.key, 'nope'), 400, 'invalid_parameter');
    expect((await list({ per_page: 100 })).status).toBe(200);
  });

  it('an empty list for an invoice without attachments; 404 for an unknown invoice', async () => {
    const empty = await newInvoice(p.orgA.admin.key);
    const res = await list({}, p.orgA.admin.key, empty);
    expect(res.body.data.items).toEqual([]);
    expect(res.body.data._meta).toEqual({ page: 1, per_page: 10, total_pages: 0, total_items: 0 });
    expectErrorBody(await list({}, p.orgA.admin.key, crypto.randomUUID()), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/invoices/{uid}/attachments',
    {
      method: 'GET',
      url: () => `/api/invoices/${invoiceA}/attachments`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/invoices/${invoiceB}/attachments`,
    },
    () => ({ t, p }),
  );
});
