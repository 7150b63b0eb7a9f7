/**
 * Knowledge documents (interface 2.3, 3.6, 4.2, 8; CONTRACT §3, §6): presign → a real multipart upload
 * over HTTP to the presigned POST form (the embedded S3-compatible endpoint) → confirm → the pg-boss
 * workflow (size, SHA-256, extracted text, `ready` or `failed`) → GET. Real small files of each of the
 * five supported types; the confirm checks (missing, oversize, wrong type); one workflow however often
 * confirm is called; the sweep of presigns never confirmed; tenancy and scopes.
 */
import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KNOWLEDGE_PROCESS_QUEUE,
  KNOWLEDGE_SWEEP_QUEUE,
  processKnowledgeDocument,
  runProcessJob,
  sweepExpiredPresigns,
} from '../../src/modules/knowledge/knowledge-processing.ts';
import type { Jobs } from '../../src/platform/jobs/jobs.ts';
import type { ObjectStorage } from '../../src/platform/storage/storage.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { listeningTestApp, uploadWithForm, type ListeningTestApp } from '../helpers/presigned-post.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { CONTENT_TYPES, sampleFile, type SampleKind } from '../helpers/sample-files.ts';
import { until } from '../helpers/until.ts';

let t: ListeningTestApp;
let p: Principals;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const LIMIT = 25 * 1024 * 1024;
const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

interface Presigned {
  presigned_post: { url: string; fields: Record<string, string> };
  knowledge_document_uid: string;
  s3_object_name: string;
  expires_in: number;
}

async function presign(
  kind: SampleKind,
  options: { key?: string; filename?: string; organizationUid?: string } = {},
): Promise<Presigned> {
  const res = await call(t.app, 'POST', '/api/knowledge/presign', {
    key: options.key ?? p.orgA.admin.key,
    body: {
      filename: options.filename ?? `sample.${kind}`,
      organization_uid: options.organizationUid ?? p.orgA.uid,
      content_type: CONTENT_TYPES[kind],
    },
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.data as Presigned;
}

const confirm = (uid: string, options: { key?: string; organizationUid?: string } = {}) =>
  call(t.app, 'POST', '/api/knowledge/confirm', {
    key: options.key ?? p.orgA.admin.key,
    body: { knowledge_document_uid: uid, organization_uid: options.organizationUid ?? p.orgA.uid },
  });

const getDocument = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'GET', `/api/knowledge/${uid}`, { key });

/** Polls until the workflow has ended (ready or failed). */
async function settled(uid: string) {
  return until(async () => {
    const { data } = (await getDocument(uid)).body;
    return (data.status === 'ready' || data.status === 'failed') && data;
  }, `knowledge document ${uid} to finish processing`);
}

async function row(uid: string) {
  const result = await t.db.execute(
    sql`select status, extracted_text, presign_expires_at, workflow_id, created_by_uid from knowledge_documents where uid = ${uid}`,
  );
  return (result as unknown as { rows: Record<string, unknown>[] }).rows[0];
}

async function jobCount(uid: string): Promise<number> {
  const result = await t.db.execute(
    sql`select count(*)::int as n from pgboss.job where name = ${KNOWLEDGE_PROCESS_QUEUE}
        and data->>'knowledge_document_uid' = ${uid}`,
  );
  return Number((result as unknown as { rows: { n: number }[] }).rows[0]!.n);
}

beforeAll(async () => {
  t = await listeningTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

describe('POST /api/knowledge/presign', () => {
  it('200 {message, data} of interface 2.3: the upload form, the document uid, the object name, 900 s', async () => {
    const res = await call(t.app, 'POST', '/api/knowledge/presign', {
      key: p.orgA.admin.key,
      body: { filename: 'Q3 report.pdf', organization_uid: p.orgA.uid, content_type: 'application/pdf' },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'message']);
    const data = res.body.data as Presigned;
    expect(Object.keys(data).sort()).toEqual([
      'expires_in',
      'knowledge_document_uid',
      'presigned_post',
      's3_object_name',
    ]);
    expect(data.knowledge_document_uid).toMatch(UUID);
    expect(data.expires_in).toBe(900);
    expect(data.s3_object_name).toBe(`${p.orgA.uid}/knowledge/${data.knowledge_document_uid}/Q3_report.pdf`);
    expect(data.presigned_post.url).toBe(`${t.baseUrl}/storage/remit`);
    expect(data.presigned_post.fields).toMatchObject({
      key: data.s3_object_name,
      'Content-Type': 'application/pdf',
    });
    expect(Object.keys(data.presigned_post.fields)).toEqual(
      expect.arrayContaining([
        'Policy',
        'X-Amz-Signature',
        'X-Amz-Credential',
        'X-Amz-Date',
        'X-Amz-Algorithm',
      ]),
    );
    // The policy pins the exact key, the type, 1 byte to 25 MB, and expires in 900 s.
    const policy = JSON.parse(Buffer.from(data.presigned_post.fields.Policy!, 'base64').toString('utf8'));
    expect(policy.conditions).toEqual(
      expect.arrayContaining([
        { key: data.s3_object_name },
        { 'Content-Type': 'application/pdf' },
        ['content-length-range', 1, LIMIT],
      ]),
    );
    const lifetime = new Date(policy.expiration).getTime() - Date.now();
    expect(lifetime).toBeGreaterThan(895_000);
    expect(lifetime).toBeLessThanOrEqual(900_000);
    // The presigned row exists, so that confirm can find it and the sweep can remove it.
    const saved = await row(data.knowledge_document_uid);
    expect(saved).toMatchObject({
      status: 'presigned',
      workflow_id: null,
      created_by_uid: p.orgA.admin.userUid,
    });
    const expiresIn = new Date(saved!.presign_expires_at as string).getTime() - Date.now();
    expect(expiresIn).toBeGreaterThan(890_000);
    expect(expiresIn).toBeLessThanOrEqual(900_000);
  });

  it('GET shows the upload as presigned before anything is uploaded', async () => {
    const presigned = await presign('docx', { filename: 'C:\\Users\\me\\policy.docx' });
    const res = await getDocument(presigned.knowledge_document_uid);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      uid: presigned.knowledge_document_uid,
      organization_uid: p.orgA.uid,
      filename: 'policy.docx',
      content_type: CONTENT_TYPES.docx,
      file_size: null,
      sha256: null,
      s3_object_name: presigned.s3_object_name,
      status: 'presigned',
      workflow_id: null,
      error: null,
    });
  });

  it('422 for any content_type but the five supported ones, and for a missing or empty filename', async () => {
    for (const content_type of ['text/plain', 'application/PDF', 'image/gif', 'application/msword', '']) {
      const res = await call(t.app, 'POST', '/api/knowledge/presign', {
        key: p.orgA.admin.key,
        body: { filename: 'a.bin', organization_uid: p.orgA.uid, content_type },
      });
      expect(expectErrorBody(res, 422, 'validation_failed').errors?.[0]?.field, content_type).toBe(
        'content_type',
      );
    }
    for (const body of [
      { organization_uid: p.orgA.uid, content_type: 'application/pdf' },
      { filename: '', organization_uid: p.orgA.uid, content_type: 'application/pdf' },
      { filename: 'a.pdf', content_type: 'application/pdf', extra: 1 },
    ]) {
      expectErrorBody(
        await call(t.app, 'POST', '/api/knowledge/presign', { key: p.orgA.admin.key, body }),
        422,
      );
    }
  });

  it("a member may upload to their organization; nobody to another's (403)", async () => {
    const presigned = await presign('png', { key: p.orgA.member.key });
    expect(presigned.s3_object_name.startsWith(`${p.orgA.uid}/knowledge/`)).toBe(true);
    const res = await call(t.app, 'POST', '/api/knowledge/presign', {
      key: p.orgA.member.key,
      body: { filename: 'a.png', organization_uid: p.orgB.uid, content_type: 'image/png' },
    });
    expectErrorBody(res, 403, 'not_a_member');
  });
});

describe('upload, confirm, process: a real file of each supported type', () => {
  const words: Record<SampleKind, string> = {
    pdf: 'Late fee policy: two percent monthly',
    docx: 'Dunning letter template for overdue accounts',
    xlsx: 'Rate card for consulting services',
    png: '',
    jpeg: '',
  };

  for (const kind of Object.keys(CONTENT_TYPES) as SampleKind[]) {
    it(`${kind}: 204 from storage, 202 processing, then ready with size, SHA-256 and its text`, async () => {
      const file = sampleFile(kind, words[kind]);
      const presigned = await presign(kind);
      const upload = await uploadWithForm(presigned.presigned_post, {
        content: file,
        filename: `sample.${kind}`,
        type: CONTENT_TYPES[kind],
      });
      expect(upload.status, upload.body).toBe(204);

      const res = await confirm(presigned.knowledge_document_uid);
      expect(res.status, res.raw).toBe(202);
      expect(Object.keys(res.body).sort()).toEqual(['data', 'message']);
      expect(res.body.data).toEqual({
        knowledge_document_uid: presigned.knowledge_document_uid,
        workflow_id: expect.any(String),
        status: 'processing',
      });

      const document = await settled(presigned.knowledge_document_uid);
      expect(Object.keys(document).sort()).toEqual(
        [
          'uid',
          'organization_uid',
          'filename',
          'content_type',
          'file_size',
          'sha256',
          's3_object_name',
          'status',
          'workflow_id',
          'error',
          'created_at',
          'updated_at',
        ].sort(),
      );
      expect(document).toMatchObject({
        uid: presigned.knowledge_document_uid,
        status: 'ready',
        error: null,
        file_size: file.length,
        sha256: sha256(file),
        content_type: CONTENT_TYPES[kind],
        workflow_id: res.body.data.workflow_id,
      });
      const text = (await row(presigned.knowledge_document_uid))!.extracted_text as string | null;
      if (words[kind]) expect(text).toContain(words[kind]);
      else expect(text).toBeNull();
    });
  }

  it('a second confirm answers the same workflow_id and starts no second workflow; so do concurrent ones', async () => {
    const file = sampleFile('pdf');
    const presigned = await presign('pdf');
    expect((await uploadWithForm(presigned.presigned_post, { content: file })).status).toBe(204);
    const uid = presigned.knowledge_document_uid;
    const answers = await Promise.all([confirm(uid), confirm(uid), confirm(uid), confirm(uid)]);
    const ids = new Set(answers.map((a) => a.body.data.workflow_id));
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202]);
    expect(ids.size).toBe(1);
    const [workflowId] = [...ids];
    await settled(uid);
    const again = await confirm(uid);
    expect(again.status).toBe(202);
    expect(again.body.data).toEqual({
      knowledge_document_uid: uid,
      workflow_id: workflowId,
      status: 'ready',
    });
    expect(await jobCount(uid)).toBe(1);
    // workflow_id is the pg-boss job that processed it.
    expect((await t.deps.jobs.getJob(KNOWLEDGE_PROCESS_QUEUE, workflowId))?.data).toMatchObject({
      knowledge_document_uid: uid,
    });
  });
});

describe('confirm refuses what is not a good upload (422, and nothing becomes ready)', () => {
  it('no object uploaded → 422; the upload stays presigned and can still be uploaded and confirmed', async () => {
    const presigned = await presign('pdf');
    const uid = presigned.knowledge_document_uid;
    const res = await confirm(uid);
    expect(expectErrorBody(res, 422, 'validation_failed').message).toMatch(/No file has been uploaded/);
    expect((await row(uid))!.status).toBe('presigned');
    expect(await jobCount(uid)).toBe(0);
    expect((await uploadWithForm(presigned.presigned_post, { content: sampleFile('pdf') })).status).toBe(204);
    expect((await confirm(uid)).status).toBe(202);
    expect((await settled(uid)).status).toBe('ready');
  });

  it('an object over 25 MB (stored around the policy) → 422', async () => {
    const presigned = await presign('pdf');
    const big = Buffer.alloc(LIMIT + 1, 0x20);
    big.write('%PDF-1.4\n', 0, 'latin1');
    await t.deps.objectStorage.putObject(presigned.s3_object_name, big, { contentType: 'application/pdf' });
    const res = await confirm(presigned.knowledge_document_uid);
    expect(expectErrorBody(res, 422).message).toMatch(/26214401 bytes; the limit is 26214400/);
    expect((await row(presigned.knowledge_document_uid))!.status).toBe('presigned');
    expect(await jobCount(presigned.knowledge_document_uid)).toBe(0);
  });

  it('a file that is not of the presigned type (a PNG sent as a PDF, within the policy) → 422', async () => {
    const presigned = await presign('pdf');
    const upload = await uploadWithForm(presigned.presigned_post, {
      content: sampleFile('png'),
      type: 'image/png',
    });
    expect(upload.status).toBe(204); // storage cannot tell; confirm can
    const res = await confirm(presigned.knowledge_document_uid);
    expect(expectErrorBody(res, 422).message).toBe('The uploaded file is not a PDF');
    expect((await row(presigned.knowledge_document_uid))!.status).toBe('presigned');
  });

  it('an object stored with another Content-Type → 422', async () => {
    const presigned = await presign('xlsx');
    await t.deps.objectStorage.putObject(presigned.s3_object_name, sampleFile('xlsx'), {
      contentType: 'application/zip',
    });
    const res = await confirm(presigned.knowledge_document_uid);
    expect(expectErrorBody(res, 422).message).toMatch(/stored as application\/zip/);
  });

  it("another organization's upload is 404, also when named with the caller's own organization", async () => {
    const foreign = await presign('pdf', { key: p.orgB.admin.key, organizationUid: p.orgB.uid });
    expectErrorBody(await confirm(foreign.knowledge_document_uid), 404, 'not_found');
    expectErrorBody(await confirm(crypto.randomUUID()), 404, 'not_found');
    expectErrorBody(await getDocument(foreign.knowledge_document_uid), 404, 'not_found');
    expectErrorBody(await call(t.app, 'GET', '/api/knowledge/not-a-uuid', { key: p.orgA.admin.key }), 400);
  });
});

describe('the workflow ends failed with the reason', () => {
  it('a file that looks like a PDF but is not readable → failed, with the reason, its size and hash', async () => {
    const broken = Buffer.from('%PDF-1.4\nthis is not really a PDF\n%%EOF\n');
    const presigned = await presign('pdf');
    expect((await uploadWithForm(presigned.presigned_post, { content: broken })).status).toBe(204);
    expect((await confirm(presigned.knowledge_document_uid)).status).toBe(202);
    const document = await settled(presigned.knowledge_document_uid);
    expect(document).toMatchObject({ status: 'failed', file_size: broken.length, sha256: sha256(broken) });
    expect(document.error).toMatch(/^The PDF could not be read/);
    expect((await confirm(presigned.knowledge_document_uid)).body.data.status).toBe('failed');
  });

  it('a spreadsheet uploaded as a Word document → failed', async () => {
    const presigned = await presign('docx');
    expect((await uploadWithForm(presigned.presigned_post, { content: sampleFile('xlsx') })).status).toBe(
      204,
    );
    expect((await confirm(presigned.knowledge_document_uid)).status).toBe(202);
    const document = await settled(presigned.knowledge_document_uid);
    expect(document.status).toBe('failed');
    expect(document.error).toMatch(/DOCX file could not be read/);
  });

  it('the object gone by the time the job runs → failed; a job for a record not processing does nothing', async () => {
    const presigned = await presign('pdf');
    const uid = presigned.knowledge_document_uid;
    // Moved to processing by hand, with no job, to run the workflow step directly.
    await t.db.execute(sql`update knowledge_documents set status = 'processing' where uid = ${uid}`);
    const deps = { db: t.db, storage: t.deps.objectStorage, jobs: t.deps.jobs };
    const data = { organization_uid: p.orgA.uid, knowledge_document_uid: uid };
    expect(await processKnowledgeDocument(deps, data)).toBe('failed');
    expect((await getDocument(uid)).body.data).toMatchObject({
      status: 'failed',
      error: 'The uploaded file is no longer in storage',
    });
    expect(await processKnowledgeDocument(deps, data)).toBe('skipped');
    // Another organization's uid in the job data finds nothing.
    expect(await processKnowledgeDocument(deps, { ...data, organization_uid: p.orgB.uid })).toBe('skipped');
  });

  it('storage unreachable: the job is retried, and the last attempt records failed instead of hanging', async () => {
    const presigned = await presign('pdf');
    const uid = presigned.knowledge_document_uid;
    await t.db.execute(sql`update knowledge_documents set status = 'processing' where uid = ${uid}`);
    const down = Object.assign(Object.create(t.deps.objectStorage) as ObjectStorage, {
      getObject: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:9000');
      },
    });
    const jobsAt = (retryCount: number) =>
      ({ getJob: async () => ({ retryCount, retryLimit: 2 }) }) as unknown as Jobs;
    const data = { organization_uid: p.orgA.uid, knowledge_document_uid: uid };
    await expect(
      runProcessJob({ db: t.db, storage: down, jobs: jobsAt(0) }, data, { id: 'x' }),
    ).rejects.toThrow(/ECONNREFUSED/);
    expect((await row(uid))!.status).toBe('processing');
    expect(await runProcessJob({ db: t.db, storage: down, jobs: jobsAt(2) }, data, { id: 'x' })).toBe(
      'failed',
    );
    expect((await getDocument(uid)).body.data.error).toBe(
      'Processing failed: connect ECONNREFUSED 127.0.0.1:9000',
    );
  });
});

describe('the sweep of presigns never confirmed', () => {
  const expire = (uid: string, secondsAgo: number) =>
    t.db.execute(
      sql`update knowledge_documents set presign_expires_at = now() - make_interval(secs => ${secondsAgo}) where uid = ${uid}`,
    );

  it('removes expired presigns and their objects; keeps fresh ones, late ones within the grace, and confirmed ones', async () => {
    const storage = t.deps.objectStorage;
    const expiredUploaded = await presign('pdf');
    expect(
      (await uploadWithForm(expiredUploaded.presigned_post, { content: sampleFile('pdf') })).status,
    ).toBe(204);
    const expiredEmpty = await presign('png');
    const fresh = await presign('jpeg');
    const withinGrace = await presign('pdf');
    const confirmed = await presign('pdf');
    expect((await uploadWithForm(confirmed.presigned_post, { content: sampleFile('pdf') })).status).toBe(204);
    expect((await confirm(confirmed.knowledge_document_uid)).status).toBe(202);
    await settled(confirmed.knowledge_document_uid);

    await expire(expiredUploaded.knowledge_document_uid, 3600);
    await expire(expiredEmpty.knowledge_document_uid, 3600);
    await expire(withinGrace.knowledge_document_uid, 60);
    await expire(confirmed.knowledge_document_uid, 3600);

    const result = await sweepExpiredPresigns({ db: t.db, storage });
    expect(result.swept).toBeGreaterThanOrEqual(2);
    expect(await row(expiredUploaded.knowledge_document_uid)).toBeUndefined();
    expect(await row(expiredEmpty.knowledge_document_uid)).toBeUndefined();
    expect(await storage.headObject(expiredUploaded.s3_object_name)).toBeNull();
    expectErrorBody(await getDocument(expiredUploaded.knowledge_document_uid), 404);
    expectErrorBody(await confirm(expiredUploaded.knowledge_document_uid), 404);

    expect((await row(fresh.knowledge_document_uid))!.status).toBe('presigned');
    expect((await row(withinGrace.knowledge_document_uid))!.status).toBe('presigned');
    expect((await row(confirmed.knowledge_document_uid))!.status).toBe('ready');
    expect(await storage.headObject(confirmed.s3_object_name)).not.toBeNull();
  });

  it('runs as the scheduled job (every 5 minutes)', async () => {
    const schedule = await t.db.execute(
      sql`select cron from pgboss.schedule where name = ${KNOWLEDGE_SWEEP_QUEUE}`,
    );
    expect((schedule as unknown as { rows: { cron: string }[] }).rows[0]?.cron).toBe('*/5 * * * *');
    const presigned = await presign('pdf');
    expect((await uploadWithForm(presigned.presigned_post, { content: sampleFile('pdf') })).status).toBe(204);
    await expire(presigned.knowledge_document_uid, 3600);
    await t.deps.jobs.enqueue(t.db, KNOWLEDGE_SWEEP_QUEUE, {});
    await until(async () => !(await row(presigned.knowledge_document_uid)), 'the sweep to remove the row');
    expect(await t.deps.objectStorage.headObject(presigned.s3_object_name)).toBeNull();
  });
});

describe('GET /api/knowledge', () => {
  const list = (query = '', key = p.orgA.admin.key) => call(t.app, 'GET', `/api/knowledge${query}`, { key });

  async function uploaded(filename: string, options: { key?: string; organizationUid?: string } = {}) {
    const presigned = await presign('pdf', { filename, ...options });
    expect((await uploadWithForm(presigned.presigned_post, { content: sampleFile('pdf') })).status).toBe(204);
    expect((await confirm(presigned.knowledge_document_uid, options)).status).toBe(202);
    return presigned.knowledge_document_uid;
  }

  it("200: the organization's confirmed documents, newest first, as GET shows each, with _meta", async () => {
    const older = await uploaded('older.pdf');
    const newer = await uploaded('newer.pdf');
    await settled(older);
    await settled(newer);
    const res = await list('?per_page=2');
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.items.map((d: { uid: string }) => d.uid)).toEqual([newer, older]);
    expect(res.body.data.items[0]).toEqual((await getDocument(newer)).body.data);
    expect(res.body.data._meta).toMatchObject({ page: 1, per_page: 2 });
    expect(res.body.data._meta.total_items).toBeGreaterThanOrEqual(2);
    const second = await list('?per_page=1&page=2');
    expect(second.body.data.items.map((d: { uid: string }) => d.uid)).toEqual([older]);
  });

  it('leaves out uploads presigned but never confirmed', async () => {
    const pending = await presign('pdf', { filename: 'never-confirmed.pdf' });
    const res = await list('?per_page=100');
    expect(res.status).toBe(200);
    const items = res.body.data.items as { uid: string; status: string }[];
    expect(items.map((d) => d.uid)).not.toContain(pending.knowledge_document_uid);
    expect(items.every((d) => d.status !== 'presigned')).toBe(true);
  });

  it("a member lists the organization's documents; another organization's never appear", async () => {
    const foreign = await uploaded('foreign.pdf', { key: p.orgB.admin.key, organizationUid: p.orgB.uid });
    const ours = await uploaded('ours.pdf', { key: p.orgA.member.key });
    const res = await list('?per_page=100', p.orgA.member.key);
    expect(res.status).toBe(200);
    const uids = (res.body.data.items as { uid: string; organization_uid: string }[]).map((d) => d.uid);
    expect(uids).toContain(ours);
    expect(uids).not.toContain(foreign);
    const b = await list(`?organization_uid=${p.orgB.uid}`, p.orgB.admin.key);
    expect(b.body.data.items.map((d: { uid: string }) => d.uid)).toEqual([foreign]);
  });

  it('400 for a per_page outside 1–100, a page below 1 or a malformed organization_uid', async () => {
    for (const query of ['?per_page=0', '?per_page=101', '?page=0', '?organization_uid=nope']) {
      expectErrorBody(await list(query), 400);
    }
  });
});

describe('Idempotency-Key', () => {
  it('a retried presign replays the first answer instead of starting a second upload', async () => {
    const headers = { 'idempotency-key': `presign-${crypto.randomUUID()}` };
    const body = { filename: 'a.pdf', organization_uid: p.orgA.uid, content_type: 'application/pdf' };
    const first = await call(t.app, 'POST', '/api/knowledge/presign', {
      key: p.orgA.admin.key,
      body,
      headers,
    });
    const second = await call(t.app, 'POST', '/api/knowledge/presign', {
      key: p.orgA.admin.key,
      body,
      headers,
    });
    expect(second.status).toBe(200);
    expect(second.body.data.knowledge_document_uid).toBe(first.body.data.knowledge_document_uid);
  });
});

const env = () => ({ t, p });
commonRouteChecks(
  'POST /api/knowledge/presign',
  {
    method: 'POST',
    url: () => '/api/knowledge/presign',
    body: () => ({ filename: 'a.pdf', content_type: 'application/pdf' }),
    scope: 'knowledge:write',
    foreignOrganizationBody: ({ p }) => ({
      filename: 'a.pdf',
      content_type: 'application/pdf',
      organization_uid: p.orgB.uid,
    }),
  },
  env,
);
commonRouteChecks(
  'POST /api/knowledge/confirm',
  {
    method: 'POST',
    url: () => '/api/knowledge/confirm',
    body: () => ({ knowledge_document_uid: crypto.randomUUID() }),
    scope: 'knowledge:write',
    foreignOrganizationBody: ({ p }) => ({
      knowledge_document_uid: crypto.randomUUID(),
      organization_uid: p.orgB.uid,
    }),
  },
  env,
);
commonRouteChecks(
  'GET /api/knowledge/{uid}',
  {
    method: 'GET',
    url: async () => `/api/knowledge/${(await presign('pdf')).knowledge_document_uid}`,
    scope: 'knowledge:write',
    foreignUrl: async ({ p }) =>
      `/api/knowledge/${(await presign('pdf', { key: p.orgB.admin.key, organizationUid: p.orgB.uid })).knowledge_document_uid}`,
  },
  env,
);
commonRouteChecks(
  'GET /api/knowledge',
  {
    method: 'GET',
    url: () => '/api/knowledge',
    scope: 'knowledge:write',
    foreignOrganizationUrl: ({ p }) => `/api/knowledge?organization_uid=${p.orgB.uid}`,
  },
  env,
);
