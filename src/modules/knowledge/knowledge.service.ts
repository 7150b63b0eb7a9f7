import crypto from 'node:crypto';
import type { Db } from '../../platform/db/client.ts';
import { inOrganization, memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { AppError, badParameter, notFound, validationFailed } from '../../platform/http/errors.ts';
import { readHeadline, type Snippet } from '../../platform/db/text-search.ts';
import { withTextSearchIndexes } from '../../platform/db/session-role.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { normalizeContentType } from '../../platform/storage/multipart-upload.ts';
import { scheduleObjectDelete } from '../../platform/storage/object-deletes.ts';
import { sanitizeFilename, type ObjectStorage, type PresignedPost } from '../../platform/storage/storage.ts';
import { changesBetween, recordAuditEvent } from '../audit/audit.service.ts';
import { KNOWLEDGE_PROCESS_QUEUE, readHead, type ProcessJobData } from './knowledge-processing.ts';
import * as repo from './knowledge.repository.ts';
import { toKnowledgeView, type KnowledgeDocumentView } from './knowledge-view.ts';
import { MAX_KNOWLEDGE_BYTES, PRESIGN_EXPIRES_S } from './knowledge.schemas.ts';
import {
  isKnowledgeContentType,
  looksLike,
  SNIFF_BYTES,
  type KnowledgeContentType,
} from './text-extraction.ts';

/**
 * Knowledge uploads (interface 2.3, 3.6, 4.2; CONTRACT §3, §6), in three steps:
 *
 * 1. presign: the row is written as `presigned` with the expiry of the upload form, so that confirm
 *    can find it and the sweep can remove what was never confirmed;
 * 2. the client uploads straight to object storage with the presigned POST form (its policy pins the
 *    key, the type and 1 byte to 25 MB);
 * 3. confirm: the object is checked again (it exists, its size, its type by its first bytes), then the
 *    row moves to `processing` and the workflow job is enqueued in the same transaction; the job
 *    (knowledge-processing.ts) completes the record and ends `ready` or `failed`.
 */

export interface KnowledgeDeps {
  db: Db;
  jobs: Jobs;
  storage: ObjectStorage;
}

export { toKnowledgeView, type KnowledgeDocumentView };

/** `<organization>/knowledge/<document uid>/<file name made safe>`. */
export function knowledgeKey(organizationUid: string, uid: string, filename: string): string {
  return `${organizationUid}/knowledge/${uid}/${sanitizeFilename(filename)}`;
}

/** The name shown back: the last path component, without control characters. */
function displayName(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const clean = base
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .normalize('NFC');
  return clean || 'file';
}

export interface PresignedUpload {
  presigned_post: PresignedPost;
  knowledge_document_uid: string;
  s3_object_name: string;
  expires_in: number;
}

export async function presignUpload(
  deps: KnowledgeDeps,
  ctx: RequestContext,
  input: { filename: string; contentType: KnowledgeContentType },
): Promise<PresignedUpload> {
  const uid = crypto.randomUUID();
  const filename = displayName(input.filename);
  const key = knowledgeKey(ctx.organizationUid, uid, filename);
  const post = await deps.storage.presignedPost(key, {
    contentType: input.contentType,
    minBytes: 1,
    maxBytes: MAX_KNOWLEDGE_BYTES,
    expiresInSeconds: PRESIGN_EXPIRES_S,
  });
  await repo.insertKnowledgeDocument(deps.db, {
    uid,
    organizationUid: ctx.organizationUid,
    filename,
    contentType: input.contentType,
    s3ObjectName: key,
    status: 'presigned',
    presignExpiresAt: new Date(Date.now() + PRESIGN_EXPIRES_S * 1000),
    createdByUid: ctx.principal.user.uid,
  });
  return {
    presigned_post: post,
    knowledge_document_uid: uid,
    s3_object_name: key,
    expires_in: PRESIGN_EXPIRES_S,
  };
}

const LABELS: Record<KnowledgeContentType, string> = {
  'application/pdf': 'a PDF',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'a DOCX document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'an XLSX workbook',
  'image/png': 'a PNG image',
  'image/jpeg': 'a JPEG image',
};

const refuse = (message: string) => validationFailed('knowledge_document_uid', message);

/**
 * The uploaded object, checked again before anything depends on it (interface §8: "enforced by the
 * storage policy and again at confirm"): it exists, 1 byte to 25 MB, stored with the presigned type,
 * and its first bytes are a file of that type. Any failure is 422 and the upload stays `presigned`
 * (the client may upload again and confirm again until the presign is swept).
 */
async function checkUploadedObject(deps: KnowledgeDeps, row: repo.KnowledgeDocumentRow): Promise<void> {
  const head = await deps.storage.headObject(row.s3ObjectName);
  if (!head)
    throw refuse('No file has been uploaded for this document (nothing is stored at s3_object_name)');
  if (head.size > MAX_KNOWLEDGE_BYTES) {
    throw refuse(
      `The uploaded file is ${head.size} bytes; the limit is ${MAX_KNOWLEDGE_BYTES} bytes (25 MB)`,
    );
  }
  if (head.size === 0) throw refuse('The uploaded file is empty');
  const storedType = normalizeContentType(head.contentType).split(';')[0]!;
  if (storedType !== row.contentType) {
    throw refuse(`The file was stored as ${storedType}, not the presigned ${row.contentType}`);
  }
  const type = row.contentType;
  if (!isKnowledgeContentType(type)) throw refuse(`Files of type ${type} are not supported`);
  const first = await readHead(deps.storage, row.s3ObjectName, SNIFF_BYTES);
  if (!first || !looksLike(type, first)) throw refuse(`The uploaded file is not ${LABELS[type]}`);
}

export interface ConfirmedUpload {
  knowledge_document_uid: string;
  workflow_id: string;
  status: repo.KnowledgeDocumentRow['status'];
}

const confirmed = (row: repo.KnowledgeDocumentRow): ConfirmedUpload => ({
  knowledge_document_uid: row.uid,
  workflow_id: row.workflowId ?? '',
  status: row.status,
});

/**
 * Starts the workflow once. The upload is looked up in the organization of the call (404 otherwise,
 * another tenant's included). Already confirmed → the same workflow_id and its current status, and no
 * second job: the move out of `presigned` is a conditional update, and the job is enqueued in its
 * transaction, so of two confirms at once exactly one enqueues.
 */
export async function confirmUpload(
  deps: KnowledgeDeps,
  ctx: RequestContext,
  uid: string,
): Promise<ConfirmedUpload> {
  const row = await repo.findKnowledgeDocument(deps.db, [ctx.organizationUid], uid);
  if (!row) throw notFound('Knowledge document');
  if (row.status !== 'presigned') return confirmed(row);
  await checkUploadedObject(deps, row);
  const started = await deps.db.transaction(async (tx) => {
    const moved = await repo.startProcessing(tx, row.organizationUid, row.uid);
    if (!moved) return undefined;
    const jobId = await deps.jobs.enqueue<ProcessJobData>(
      tx,
      KNOWLEDGE_PROCESS_QUEUE,
      { organization_uid: row.organizationUid, knowledge_document_uid: row.uid },
      // A retry only happens when the job itself throws (storage or database unreachable).
      { retryLimit: 2, retryDelaySeconds: 15 },
    );
    return repo.setWorkflowId(tx, row.organizationUid, row.uid, jobId);
  });
  if (started) return confirmed(started);
  // Confirmed meanwhile by another request (or swept): answer what is there now.
  const now = await repo.findKnowledgeDocument(deps.db, [ctx.organizationUid], uid);
  if (!now) throw notFound('Knowledge document');
  return confirmed(now);
}

/** A document of any organization the caller belongs to; anything else is 404. */
export async function getKnowledgeDocument(
  deps: Pick<KnowledgeDeps, 'db'>,
  ctx: RequestContext,
  uid: string,
): Promise<KnowledgeDocumentView> {
  const row = await repo.findKnowledgeDocument(deps.db, memberOrganizationUids(ctx), uid);
  if (!row) throw notFound('Knowledge document');
  return toKnowledgeView(row);
}

/** The call's organization's confirmed documents, newest first (what the console's Knowledge page lists). */
export async function listKnowledgeDocuments(
  deps: Pick<KnowledgeDeps, 'db'>,
  ctx: RequestContext,
  page: PageRequest,
): Promise<{ items: KnowledgeDocumentView[]; total: number }> {
  const { rows, total } = await repo.listKnowledgeDocuments(deps.db, ctx.organizationUid, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(toKnowledgeView), total };
}

/**
 * A presign's form stays valid until its expiry: an upload made with it after the delete would store
 * the object again, so a second removal runs this long after the form expired.
 */
const LATE_UPLOAD_GRACE_MS = 60_000;

/**
 * `DELETE /api/knowledge/{uid}`: the document goes (a real delete: nothing points at it), with its
 * audit event and the removal of its object, enqueued in the same transaction and done by a job after
 * the commit (platform/storage/object-deletes.ts). Admins delete any document of their organization;
 * a member only what they uploaded (403 otherwise). A processing job that is still running finds no
 * row when it finishes and changes nothing.
 */
export async function deleteKnowledgeDocument(
  deps: KnowledgeDeps,
  ctx: RequestContext,
  uid: string,
): Promise<KnowledgeDocumentView> {
  const found = await repo.findKnowledgeDocument(deps.db, memberOrganizationUids(ctx), uid);
  if (!found) throw notFound('Knowledge document');
  const organizationUid = found.organizationUid;
  const within = inOrganization(ctx, organizationUid);
  if (within.role !== 'admin' && found.createdByUid !== ctx.principal.user.uid) {
    throw new AppError(
      'forbidden',
      'Only an admin, or the member who uploaded it, may delete this knowledge document',
    );
  }
  const deleted = await deps.db.transaction(async (tx) => {
    const row = await repo.deleteKnowledgeDocument(tx, organizationUid, uid);
    if (!row) throw notFound('Knowledge document');
    const view = toKnowledgeView(row);
    await recordAuditEvent(tx, within, {
      organizationUid,
      action: 'knowledge_document.deleted',
      entityUid: uid,
      changes: changesBetween(view, null),
    });
    await scheduleObjectDelete(tx, deps.jobs, { organizationUid, key: row.s3ObjectName });
    const formValidUntil = row.status === 'presigned' ? row.presignExpiresAt : null;
    if (formValidUntil && formValidUntil.getTime() > Date.now()) {
      await scheduleObjectDelete(tx, deps.jobs, {
        organizationUid,
        key: row.s3ObjectName,
        startAfter: new Date(formValidUntil.getTime() + LATE_UPLOAD_GRACE_MS),
      });
    }
    return view;
  });
  return deleted;
}

export interface KnowledgePassage {
  knowledge_document_uid: string;
  filename: string;
  content_type: string;
  rank: number;
  snippet: Snippet;
  created_at: Date;
  updated_at: Date;
}

/**
 * Full-text search of the call's organization's knowledge (docs/knowledge.md#full-text-search): the
 * extracted text of its `ready` documents, in the organization's search language, best first, a page at
 * a time, each with a snippet. The same function serves `GET /api/knowledge/search` and the collections
 * agent (which cites what it finds), so both see exactly one organization's documents.
 */
export async function searchKnowledge(
  deps: Pick<KnowledgeDeps, 'db'>,
  ctx: RequestContext,
  q: string,
  page: PageRequest,
): Promise<{ items: KnowledgePassage[]; total: number }> {
  const text = q.trim();
  if (text.length < 2) throw badParameter('q', 'q needs at least 2 characters');
  // Outside the row policy, as every text-filtered read: `@@` is not leakproof, so under the policy the
  // (organization, vector) index could not serve it. The statements name the organization themselves.
  const { rows, total } = await withTextSearchIndexes(true, () =>
    repo.searchKnowledgeText(deps.db, ctx.organizationUid, text, {
      limit: page.perPage,
      offset: offsetOf(page),
    }),
  );
  return {
    items: rows.map((r) => ({
      knowledge_document_uid: r.uid,
      filename: r.filename,
      content_type: r.contentType,
      rank: r.rank,
      snippet: readHeadline(r.headline),
      created_at: r.createdAt,
      updated_at: r.updatedAt,
    })),
    total,
  };
}
