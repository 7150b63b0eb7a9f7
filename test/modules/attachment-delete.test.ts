/**
 * `DELETE /api/invoices/{uid}/attachments/{attachment_uid}` (issue 22, item 4; docs/storage.md#deleting-objects):
 * the attachment leaves the list at once, its object is removed by a durable job after the commit (the
 * presigned download then answers 404; against an S3 API, the DeleteObject reaches it and is retried
 * when S3 fails), the audit event under the invoice, who may delete (admins any, members their own
 * uploads on invoices they see), and the usual route checks.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OBJECT_DELETE_QUEUE } from '../../src/platform/storage/object-deletes.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { until } from '../helpers/until.ts';

let t: TestApp;
let p: Principals;
let invoiceA: string;
let foreign: { invoice: string; attachment: string };
const MISSING = '00000000-0000-4000-8000-000000000000';

/** A multipart/form-data upload through the app (the platform's own FormData encodes it). */
async function upload(app: TestApp, invoiceUid: string, key: string, content = crypto.randomBytes(2048)) {
  const form = new FormData();
  form.append('description', 'Signed copy');
  form.append('file', new Blob([new Uint8Array(content)], { type: 'application/pdf' }), 'signed.pdf');
  const request = new Request('http://form.test/', { method: 'POST', body: form });
  const res = await app.app.inject({
    method: 'POST',
    url: `/api/invoices/${invoiceUid}/attachments`,
    headers: { authorization: `Bearer ${key}`, 'content-type': request.headers.get('content-type')! },
    payload: Buffer.from(await request.arrayBuffer()),
  });
  expect(res.statusCode, res.body).toBe(201);
  return JSON.parse(res.body).data as { uid: string; presigned_url: string; uploaded_by: number };
}

async function newInvoice(app: TestApp, key: string, body: Record<string, unknown> = {}) {
  const res = await call(app.app, 'POST', '/api/invoices', {
    key,
    body: {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `INV-${crypto.randomBytes(4).toString('hex')}`,
      currency: 'USD',
      ...body,
    },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.uid as string;
}

const remove = (invoiceUid: string, uid: string, key = p.orgA.admin.key, app = t) =>
  call(app.app, 'DELETE', `/api/invoices/${invoiceUid}/attachments/${uid}`, { key });
const listed = async (invoiceUid: string, key = p.orgA.admin.key) =>
  (
    await call(t.app, 'GET', `/api/invoices/${invoiceUid}/attachments`, { key, query: { per_page: 100 } })
  ).body.data.items.map((a: { uid: string }) => a.uid) as string[];

async function storageKeyOf(app: TestApp, uid: string) {
  const result = await app.db.execute(sql`select storage_key from invoice_attachments where uid = ${uid}`);
  return (result as unknown as { rows: { storage_key: string }[] }).rows[0]!.storage_key;
}

async function deleteJob(app: TestApp, key: string) {
  const result = await app.db.execute(
    sql`select state, retry_count, retry_limit from pgboss.job where name = ${OBJECT_DELETE_QUEUE} and data->>'key' = ${key}`,
  );
  return (result as unknown as { rows: { state: string; retry_count: number; retry_limit: number }[] })
    .rows[0];
}

/** GET of a presigned URL through the app, with the Host header the URL was signed for. */
function download(url: string) {
  const u = new URL(url);
  return t.app.inject({ method: 'GET', url: u.pathname + u.search, headers: { host: u.host } });
}

beforeAll(async () => {
  t = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  invoiceA = await newInvoice(t, p.orgA.admin.key, { assignee_user_uids: [p.orgA.member.userUid] });
  const invoiceB = await newInvoice(t, p.orgB.admin.key);
  foreign = { invoice: invoiceB, attachment: (await upload(t, invoiceB, p.orgB.admin.key)).uid };
});
afterAll(async () => t?.close());

describe('DELETE /api/invoices/{uid}/attachments/{attachment_uid}', () => {
  it('200 with the attachment as it was (no presigned_url); out of the list; its object really gone', async () => {
    const attachment = await upload(t, invoiceA, p.orgA.admin.key);
    const key = await storageKeyOf(t, attachment.uid);
    expect((await download(attachment.presigned_url)).statusCode).toBe(200);
    const res = await remove(invoiceA, attachment.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', message: 'Attachment deleted' });
    const { presigned_url: _url, ...fields } = attachment;
    expect(res.body.data).toEqual(fields);
    expect(res.body.data).not.toHaveProperty('presigned_url');
    expect(await listed(invoiceA)).not.toContain(attachment.uid);
    expectErrorBody(await remove(invoiceA, attachment.uid), 404, 'not_found');

    await until(async () => (await t.deps.objectStorage.headObject(key)) === null, 'the object removed');
    // A download address handed out before the delete now finds nothing.
    expect((await download(attachment.presigned_url)).statusCode).toBe(404);
    await until(async () => (await deleteJob(t, key))?.state === 'completed', 'the job to complete');
  });

  it('records attachment.deleted under its invoice', async () => {
    const attachment = await upload(t, invoiceA, p.orgA.admin.key);
    await remove(invoiceA, attachment.uid);
    const result = await t.db.execute(
      sql`select action, parent_entity_type, parent_entity_uid, changes from audit_events where entity_uid = ${attachment.uid}`,
    );
    const rows = (result as unknown as { rows: Record<string, unknown>[] }).rows;
    expect(rows).toEqual([
      expect.objectContaining({
        action: 'attachment.deleted',
        parent_entity_type: 'invoice',
        parent_entity_uid: invoiceA,
      }),
    ]);
    expect(rows[0]!.changes).toMatchObject({
      filename: { before: 'signed.pdf', after: null },
      description: { before: 'Signed copy', after: null },
    });
    // The invoice's history shows it (entity_uid filter includes what belongs to the invoice).
    const history = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
      key: p.orgA.admin.key,
      query: { entity_uid: invoiceA, action: 'attachment.deleted', per_page: 100 },
    });
    expect(history.status, history.raw).toBe(200);
    expect(history.body.data.items.map((e: { entity_uid: string }) => e.entity_uid)).toContain(
      attachment.uid,
    );
  });

  it('a member deletes their own upload on an invoice they see; not an admin’s (403); an invoice they do not see is 404', async () => {
    const own = await upload(t, invoiceA, p.orgA.member.key);
    const admins = await upload(t, invoiceA, p.orgA.admin.key);
    expectErrorBody(await remove(invoiceA, admins.uid, p.orgA.member.key), 403, 'forbidden');
    expect(await listed(invoiceA)).toContain(admins.uid);
    expect((await remove(invoiceA, own.uid, p.orgA.member.key)).status).toBe(200);

    const hidden = await newInvoice(t, p.orgA.admin.key);
    const onHidden = await upload(t, hidden, p.orgA.admin.key);
    expectErrorBody(await remove(hidden, onHidden.uid, p.orgA.member.key), 404, 'not_found');
    // Admins delete anyone's.
    const members = await upload(t, invoiceA, p.orgA.member.key);
    expect((await remove(invoiceA, members.uid)).status).toBe(200);
  });

  it('404 for an unknown attachment, one of another invoice, or an unknown invoice; 400 for a malformed uid', async () => {
    const other = await newInvoice(t, p.orgA.admin.key);
    const attachment = await upload(t, other, p.orgA.admin.key);
    expectErrorBody(await remove(invoiceA, attachment.uid), 404, 'not_found');
    expect(await listed(other)).toContain(attachment.uid);
    expectErrorBody(await remove(invoiceA, MISSING), 404, 'not_found');
    expectErrorBody(await remove(MISSING, attachment.uid), 404, 'not_found');
    expectErrorBody(await remove(invoiceA, 'nope'), 400, 'invalid_parameter');
  });

  it("another organization's attachment is 404, also under the caller's own invoice", async () => {
    expectErrorBody(await remove(foreign.invoice, foreign.attachment), 404, 'not_found');
    expectErrorBody(await remove(invoiceA, foreign.attachment), 404, 'not_found');
    const theirs = await call(t.app, 'GET', `/api/invoices/${foreign.invoice}/attachments`, {
      key: p.orgB.admin.key,
    });
    expect(theirs.body.data.items.map((a: { uid: string }) => a.uid)).toContain(foreign.attachment);
  });

  commonRouteChecks(
    'DELETE /api/invoices/{uid}/attachments/{attachment_uid}',
    {
      method: 'DELETE',
      url: async () =>
        `/api/invoices/${invoiceA}/attachments/${(await upload(t, invoiceA, p.orgA.admin.key)).uid}`,
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreign.invoice}/attachments/${foreign.attachment}`,
    },
    () => ({ t, p }),
  );
});

describe('with an S3 API as the object storage', () => {
  /** A small S3 stand-in: PUT, HEAD, GET and DELETE of objects by path; DELETEs fail while `failDeletes` > 0. */
  const objects = new Map<string, Buffer>();
  const deletes: string[] = [];
  let failDeletes = 0;
  const s3 = http.createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url!, 'http://s3').pathname);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'PUT') {
        objects.set(path, Buffer.concat(chunks));
        res.writeHead(200, { etag: '"0"' }).end();
      } else if (req.method === 'DELETE') {
        deletes.push(path);
        if (failDeletes > 0) {
          failDeletes -= 1;
          res.writeHead(503, { 'content-type': 'application/xml' });
          res.end('<Error><Code>ServiceUnavailable</Code><Message>Slow down</Message></Error>');
          return;
        }
        objects.delete(path);
        res.writeHead(204).end();
      } else {
        const body = objects.get(path);
        if (!body) res.writeHead(404).end();
        else
          res.writeHead(200, { 'content-length': body.length }).end(req.method === 'HEAD' ? undefined : body);
      }
    });
  });
  let s: TestApp;
  let q: Principals;
  let invoice: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => s3.listen(0, '127.0.0.1', resolve));
    s = await createTestApp({
      workers: true,
      env: {
        RATE_LIMIT_MAX: '100000',
        S3_ENDPOINT: `http://127.0.0.1:${(s3.address() as AddressInfo).port}`,
        S3_BUCKET: 'remit-test',
        S3_REGION: 'us-east-1',
        S3_ACCESS_KEY_ID: 'AKIATEST',
        S3_SECRET_ACCESS_KEY: 'secret-test',
      },
    });
    q = await createPrincipals(s);
    invoice = await newInvoice(s, q.orgA.admin.key);
  });
  afterAll(async () => {
    await s?.close();
    await new Promise<void>((resolve) => s3.close(() => resolve()));
  });

  it('the object is deleted from S3 after the commit', async () => {
    const attachment = await upload(s, invoice, q.orgA.admin.key);
    const key = await storageKeyOf(s, attachment.uid);
    expect(objects.has(`/remit-test/${key}`)).toBe(true);
    expect((await remove(invoice, attachment.uid, q.orgA.admin.key, s)).status).toBe(200);
    await until(async () => !objects.has(`/remit-test/${key}`), 'the DeleteObject to reach S3');
    expect(deletes).toContain(`/remit-test/${key}`);
  });

  it('S3 failing: the job is retried until the delete goes through', async () => {
    const attachment = await upload(s, invoice, q.orgA.admin.key);
    const key = await storageKeyOf(s, attachment.uid);
    // More failures than the SDK's own attempts (3): the job's first run fails.
    failDeletes = 4;
    expect((await remove(invoice, attachment.uid, q.orgA.admin.key, s)).status).toBe(200);
    await until(async () => !objects.has(`/remit-test/${key}`), 'the retried DeleteObject');
    const job = await until(async () => {
      const found = await deleteJob(s, key);
      return found?.state === 'completed' && found;
    }, 'the job to complete');
    expect(job.retry_count).toBeGreaterThanOrEqual(1);
    expect(failDeletes).toBe(0);
  });
});
