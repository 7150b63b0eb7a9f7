import crypto from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Db } from '../../platform/db/client.ts';
import { memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { notFound } from '../../platform/http/errors.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { sanitizeFilename, type ObjectStorage } from '../../platform/storage/storage.ts';
import { DOCUMENT_TEXT_QUEUE, type DocumentTextJobData } from './document-text.ts';
import * as repo from './documents.repository.ts';

export interface DocumentDeps {
  db: Db;
  storage: ObjectStorage;
  /** Where the text extraction job of a new document is enqueued (in the insert's transaction). */
  jobs: Jobs;
  /** Lifetime of the presigned_url handed out, seconds. */
  urlExpiresS: number;
  /** Told when an object could not be removed after a failed insert (it is then an orphan). */
  onOrphan?: (key: string, error: unknown) => void;
}

export interface DocumentView {
  uid: string;
  organization_uid: string;
  filename: string;
  document_name: string;
  content_type: string;
  file_size: number;
  sha256: string;
  uploaded_by_uid: string | null;
  created_at: Date;
  updated_at: Date;
  presigned_url: string;
}

export interface NewDocument {
  /** The uploaded bytes, in a local file (the spooled multipart part). */
  path: string;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  documentName: string | undefined;
}

/** `<organization>/documents/<document uid>/<file name made safe>`. */
export function documentKey(organizationUid: string, uid: string, filename: string): string {
  return `${organizationUid}/documents/${uid}/${sanitizeFilename(filename)}`;
}

async function toView(deps: DocumentDeps, row: repo.DocumentRow): Promise<DocumentView> {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    filename: row.filename,
    document_name: row.documentName,
    content_type: row.contentType,
    file_size: Number(row.fileSize),
    sha256: row.sha256,
    uploaded_by_uid: row.uploadedByUid,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    presigned_url: await deps.storage.presignedGetUrl(row.storageKey, {
      expiresInSeconds: deps.urlExpiresS,
      filename: row.filename,
    }),
  };
}

/**
 * Stores the file, then records it (in the same object storage as knowledge uploads). The object goes
 * first so that a row never points at nothing; if the row cannot be written the object is deleted again.
 */
export async function createDocument(
  deps: DocumentDeps,
  ctx: RequestContext,
  input: NewDocument,
): Promise<DocumentView> {
  const uid = crypto.randomUUID();
  const key = documentKey(ctx.organizationUid, uid, input.filename);
  await deps.storage.putObject(key, createReadStream(input.path), {
    contentType: input.contentType,
    contentLength: input.size,
  });
  let row: repo.DocumentRow;
  try {
    // One transaction, so that under an Idempotency-Key the row and the stored answer commit together.
    // The text for search is read by a job, enqueued here so it exists exactly when the row does.
    row = await deps.db.transaction(async (tx) => {
      const inserted = await repo.insertDocument(tx, {
        uid,
        organizationUid: ctx.organizationUid,
        filename: input.filename,
        documentName: input.documentName?.trim() || input.filename,
        contentType: input.contentType,
        fileSize: input.size,
        sha256: input.sha256,
        storageKey: key,
        uploadedByUid: ctx.principal.user.uid,
      });
      await deps.jobs.enqueue<DocumentTextJobData>(
        tx,
        DOCUMENT_TEXT_QUEUE,
        { organization_uid: ctx.organizationUid, document_uid: uid },
        { retryLimit: 2, retryDelaySeconds: 15 },
      );
      return inserted;
    });
  } catch (error) {
    try {
      await deps.storage.deleteObject(key);
    } catch (cleanupError) {
      deps.onOrphan?.(key, cleanupError);
    }
    throw error;
  }
  return toView(deps, row);
}

/** A document of any organization the caller belongs to, with a fresh presigned_url; else 404. */
export async function getDocument(
  deps: DocumentDeps,
  ctx: RequestContext,
  uid: string,
): Promise<DocumentView> {
  const row = await repo.findDocument(deps.db, memberOrganizationUids(ctx), uid);
  if (!row) throw notFound('Document');
  return toView(deps, row);
}
