/**
 * `DELETE /api/knowledge/{uid}` (issue 22, item 4; docs/knowledge.md#deleting-a-document): the document
 * goes at once from GET, the list and search; its object is removed by a durable job after the commit
 * (really gone from the embedded store, retried when storage fails); the audit event; who may delete
 * (admins any, members their own uploads); a presign still valid gets a second removal after its form
 * expires; the usual route checks.
 */
import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OBJECT_DELETE_QUEUE } from '../../src/platform/storage/object-deletes.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { listeningTestApp, uploadWithForm, type ListeningTestApp } from '../helpers/presigned-post.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { CONTENT_TYPES, sampleFile } from '../helpers/sample-files.ts';
import { until } from '../helpers/until.ts';

let t: ListeningTestApp;
let p: Principals;
let foreignDocument: string;
const MISSING = '00000000-0000-4000-8000-000000000000';

interface Presigned {
  presigned_post: { url: string; fields: Record<string, string> };
  knowledge_document_uid: string;
  s3_object_name: string;
}

beforeAll(async () => {
  t = await listeningTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  foreignDocument = (await ready({ key: p.orgB.admin.key, organizationUid: p.orgB.uid })).uid;
});
afterAll(async () => t?.close());

async function presign(options: { key?: string; organizationUid?: string; filename?: string } = {}) {
  const res = await call(t.app, 'POST', '/api/knowledge/presign', {
    key: options.key ?? p.orgA.admin.key,
    body: {
      filename: options.filename ?? `policy-${crypto.randomBytes(3).toString('hex')}.pdf`,
      organization_uid: options.organizationUid ?? p.orgA.uid,
      content_type: CONTENT_TYPES.pdf,
    },
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.data as Presigned;
}

/** A document uploaded, confirmed and processed to `ready`. */
async function ready(options: { key?: string; organizationUid?: string; filename?: string } = {}) {
  const presigned = await presign(options);
  const upload = await uploadWithForm(presigned.presigned_post, { content: sampleFile('pdf', 'Late fees') });
  expect(upload.status, upload.body).toBe(204);
  const confirmed = await call(t.app, 'POST', '/api/knowledge/confirm', {
    key: options.key ?? p.orgA.admin.key,
    body: {
      knowledge_document_uid: presigned.knowledge_document_uid,
      organization_uid: options.organizationUid ?? p.orgA.uid,
    },
  });
  expect(confirmed.status, confirmed.raw).toBe(202);
  const uid = presigned.knowledge_document_uid;
  await until(async () => {
    const got = await call(t.app, 'GET', `/api/knowledge/${uid}`, { key: options.key ?? p.orgA.admin.key });
    return got.body.data?.status === 'ready';
  }, `document ${uid} ready`);
  return { uid, key: presigned.s3_object_name };
}

const remove = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'DELETE', `/api/knowledge/${uid}`, { key });
const stored = async (key: string) => (await t.deps.objectStorage.headObject(key)) !== null;

async function deleteJobs(key: string) {
  const result = await t.db.execute(
    sql`select id::text, state, retry_limit, retry_count, start_after from pgboss.job
        where name = ${OBJECT_DELETE_QUEUE} and data->>'key' = ${key} order by start_after`,
  );
  return (
    result as unknown as {
      rows: { id: string; state: string; retry_limit: number; retry_count: number; start_after: Date }[];
    }
  ).rows;
}

describe('DELETE /api/knowledge/{uid}', () => {
  it('200 with the document as it was; then 404, out of the list and search, and its object really gone', async () => {
    const filename = `zephyr-${crypto.randomBytes(3).toString('hex')}.pdf`;
    const doc = await ready({ filename });
    const before = (await call(t.app, 'GET', `/api/knowledge/${doc.uid}`, { key: p.orgA.admin.key })).body
      .data;
    const search = () =>
      call(t.app, 'GET', '/api/search', {
        key: p.orgA.admin.key,
        query: { q: filename.slice(0, 12), types: 'knowledge' },
      });
    expect((await search()).body.data.data.map((i: { entity_uid: string }) => i.entity_uid)).toEqual([
      doc.uid,
    ]);
    expect(await stored(doc.key)).toBe(true);

    const res = await remove(doc.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', message: 'Knowledge document deleted' });
    expect(res.body.data).toEqual(before);

    expectErrorBody(await call(t.app, 'GET', `/api/knowledge/${doc.uid}`, { key: p.orgA.admin.key }), 404);
    const listed = await call(t.app, 'GET', '/api/knowledge', {
      key: p.orgA.admin.key,
      query: { per_page: 100 },
    });
    expect(listed.body.data.items.map((d: { uid: string }) => d.uid)).not.toContain(doc.uid);
    expect((await search()).body.data.data).toEqual([]);
    expectErrorBody(await remove(doc.uid), 404, 'not_found');

    await until(async () => !(await stored(doc.key)), 'the object to be removed');
    const [job] = await until(async () => {
      const jobs = await deleteJobs(doc.key);
      return jobs[0]?.state === 'completed' && jobs;
    }, 'the job to complete');
    expect(job).toMatchObject({ state: 'completed', retry_limit: 20, retry_count: 0 });
  });

  it('records knowledge_document.deleted with what the document was', async () => {
    const doc = await ready();
    await remove(doc.uid);
    const result = await t.db.execute(
      sql`select action, actor_type, changes from audit_events where entity_uid = ${doc.uid}`,
    );
    const rows = (result as unknown as { rows: { action: string; changes: Record<string, unknown> }[] }).rows;
    expect(rows).toEqual([
      expect.objectContaining({ action: 'knowledge_document.deleted', actor_type: 'api_key' }),
    ]);
    expect(rows[0]!.changes).toMatchObject({
      status: { before: 'ready', after: null },
      s3_object_name: { before: doc.key, after: null },
    });
  });

  it('the removal is a job committed with the delete, retried when storage fails', async () => {
    const doc = await ready();
    const spy = vi
      .spyOn(t.deps.objectStorage, 'deleteObject')
      .mockRejectedValueOnce(new Error('connect ECONNREFUSED 127.0.0.1:9000'));
    try {
      expect((await remove(doc.uid)).status).toBe(200);
      await until(async () => !(await stored(doc.key)), 'the retried removal');
      const [job] = await until(async () => {
        const jobs = await deleteJobs(doc.key);
        return jobs[0]?.state === 'completed' && jobs;
      }, 'the job to complete');
      expect(job!.retry_count).toBe(1);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });

  it('a presign still valid: deleted now, and removed again once its upload form has expired', async () => {
    const presigned = await presign();
    const uid = presigned.knowledge_document_uid;
    expect((await remove(uid)).status).toBe(200);
    expectErrorBody(await call(t.app, 'GET', `/api/knowledge/${uid}`, { key: p.orgA.admin.key }), 404);
    const jobs = await deleteJobs(presigned.s3_object_name);
    expect(jobs).toHaveLength(2);
    const late = new Date(jobs[1]!.start_after).getTime();
    // The form's 900 s, plus a minute for an upload that started just in time.
    expect(late - Date.now()).toBeGreaterThan(900_000);
    expect(late - Date.now()).toBeLessThan(965_000);
    // A confirm after the delete finds nothing.
    const confirmed = await call(t.app, 'POST', '/api/knowledge/confirm', {
      key: p.orgA.admin.key,
      body: { knowledge_document_uid: uid, organization_uid: p.orgA.uid },
    });
    expectErrorBody(confirmed, 404);
  });

  it('a member deletes their own upload, not one of another person (403); admins delete any', async () => {
    const own = await ready({ key: p.orgA.member.key });
    const admins = await ready();
    const refused = await remove(admins.uid, p.orgA.member.key);
    expectErrorBody(refused, 403, 'forbidden');
    expect((await call(t.app, 'GET', `/api/knowledge/${admins.uid}`, { key: p.orgA.admin.key })).status).toBe(
      200,
    );
    expect((await remove(own.uid, p.orgA.member.key)).status).toBe(200);
    const another = await ready({ key: p.orgA.member.key });
    expect((await remove(another.uid, p.orgA.admin.key)).status).toBe(200);
  });

  it('404 for an unknown uid; 400 for a malformed one', async () => {
    expectErrorBody(await remove(MISSING), 404, 'not_found');
    expectErrorBody(await remove('not-a-uuid'), 400, 'invalid_parameter');
  });

  it("another organization's document is 404, and stays", async () => {
    expectErrorBody(await remove(foreignDocument), 404, 'not_found');
    const got = await call(t.app, 'GET', `/api/knowledge/${foreignDocument}`, { key: p.orgB.admin.key });
    expect(got.status).toBe(200);
  });

  commonRouteChecks(
    'DELETE /api/knowledge/{uid}',
    {
      method: 'DELETE',
      url: async () => `/api/knowledge/${(await presign()).knowledge_document_uid}`,
      scope: 'knowledge:write',
      foreignUrl: () => `/api/knowledge/${foreignDocument}`,
    },
    () => ({ t, p }),
  );
});
