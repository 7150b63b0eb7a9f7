import crypto from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Db } from '../../platform/db/client.ts';
import { inOrganization, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { scheduleObjectDelete } from '../../platform/storage/object-deletes.ts';
import { changesBetween, recordAuditEvent } from '../audit/audit.service.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { sanitizeFilename, type ObjectStorage } from '../../platform/storage/storage.ts';
import * as repo from './attachments.repository.ts';
import { invoiceReader, visibleInvoices } from './invoice-access.ts';
import { findInvoice } from './invoices.repository.ts';
import { isForeignKeyViolation } from '../../platform/db/errors.ts';

export interface AttachmentDeps {
  db: Db;
  storage: ObjectStorage;
  /** Lifetime of the presigned_url handed out, seconds. */
  urlExpiresS: number;
  /** Told when an object could not be removed after a failed insert (it is then an orphan). */
  onOrphan?: (key: string, error: unknown) => void;
}

/** A delete also enqueues the removal of the attachment's object. */
export interface AttachmentDeleteDeps extends AttachmentDeps {
  jobs: Jobs;
}

/** Interface 2.13. */
export interface AttachmentView {
  uid: string;
  filename: string;
  content_type: string;
  file_size: number;
  uploaded_by: number;
  created_on: string;
  description: string;
  is_public: boolean;
  invoice_uid: string;
  presigned_url: string;
}

export interface NewAttachment {
  /** The uploaded bytes, in a local file (the spooled multipart part). */
  path: string;
  filename: string;
  contentType: string;
  size: number;
  description: string;
  isPublic: boolean;
}

/** `<organization>/invoices/<invoice>/<attachment>/<file name made safe>`. */
export function attachmentKey(organizationUid: string, invoiceUid: string, uid: string, filename: string) {
  return `${organizationUid}/invoices/${invoiceUid}/${uid}/${sanitizeFilename(filename)}`;
}

async function toView(deps: AttachmentDeps, row: repo.AttachmentRow): Promise<AttachmentView> {
  return {
    ...deletedView(row),
    presigned_url: await deps.storage.presignedGetUrl(row.storageKey, {
      expiresInSeconds: deps.urlExpiresS,
      filename: row.filename,
    }),
  };
}

/** An invoice of one of the caller's organizations, or 404 (another tenant's invoice included). */
async function invoiceOf(deps: AttachmentDeps, ctx: RequestContext, invoiceUid: string) {
  const invoice = await findInvoice(
    deps.db,
    visibleInvoices(deps.db, invoiceReader(ctx.principal)),
    invoiceUid,
  );
  if (!invoice) throw notFound('Invoice');
  return invoice;
}

/** 404 unless the invoice is one of the caller's (checked before an upload is read). */
export async function assertInvoiceVisible(deps: AttachmentDeps, ctx: RequestContext, invoiceUid: string) {
  await invoiceOf(deps, ctx, invoiceUid);
}

/**
 * Stores the file, then records it. The object goes first so that a row never points at nothing; if the
 * row cannot be written the object is deleted again (an invoice deleted meanwhile → 404).
 */
export async function createAttachment(
  deps: AttachmentDeps,
  ctx: RequestContext,
  invoiceUid: string,
  input: NewAttachment,
): Promise<AttachmentView> {
  const invoice = await invoiceOf(deps, ctx, invoiceUid);
  const uid = crypto.randomUUID();
  const key = attachmentKey(invoice.organizationUid, invoice.uid, uid, input.filename);
  await deps.storage.putObject(key, createReadStream(input.path), {
    contentType: input.contentType,
    contentLength: input.size,
  });
  let row: repo.AttachmentRow;
  try {
    // One transaction, so that under an Idempotency-Key the row and the stored answer commit together.
    row = await deps.db.transaction((tx) =>
      repo.insertAttachment(tx, {
        uid,
        organizationUid: invoice.organizationUid,
        invoiceUid: invoice.uid,
        filename: input.filename,
        contentType: input.contentType,
        fileSize: input.size,
        storageKey: key,
        uploadedBy: ctx.principal.user.id,
        description: input.description,
        isPublic: input.isPublic,
      }),
    );
  } catch (error) {
    try {
      await deps.storage.deleteObject(key);
    } catch (cleanupError) {
      deps.onOrphan?.(key, cleanupError);
    }
    if (isForeignKeyViolation(error)) throw notFound('Invoice');
    throw error;
  }
  return toView(deps, row);
}

/** The invoice's attachments, newest first, each with a fresh presigned_url. */
export async function listAttachments(
  deps: AttachmentDeps,
  ctx: RequestContext,
  invoiceUid: string,
  page: PageRequest,
): Promise<{ items: AttachmentView[]; total: number }> {
  const invoice = await invoiceOf(deps, ctx, invoiceUid);
  const rows = await repo.listAttachments(deps.db, invoice.organizationUid, invoice.uid, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  const total = await repo.countAttachments(deps.db, invoice.organizationUid, invoice.uid);
  return { items: await Promise.all(rows.map((row) => toView(deps, row))), total };
}

export type DeletedAttachmentView = Omit<AttachmentView, 'presigned_url'>;

function deletedView(row: repo.AttachmentRow): DeletedAttachmentView {
  return {
    uid: row.uid,
    filename: row.filename,
    content_type: row.contentType,
    file_size: Number(row.fileSize),
    uploaded_by: row.uploadedBy,
    created_on: row.createdOn.toISOString(),
    description: row.description,
    is_public: row.isPublic,
    invoice_uid: row.invoiceUid,
  };
}

/**
 * `DELETE /api/invoices/{uid}/attachments/{attachment_uid}`. The invoice follows the one visibility
 * rule (404 otherwise, like another organization's). Admins delete any attachment; a member only one
 * they uploaded (403). The row goes (nothing points at it) with its audit event and the removal of its
 * object, enqueued in the same transaction and done by a job once it commits.
 */
export async function deleteAttachment(
  deps: AttachmentDeleteDeps,
  ctx: RequestContext,
  invoiceUid: string,
  attachmentUid: string,
): Promise<DeletedAttachmentView> {
  const invoice = await invoiceOf(deps, ctx, invoiceUid);
  const organizationUid = invoice.organizationUid;
  const found = await repo.findAttachment(deps.db, organizationUid, invoice.uid, attachmentUid);
  if (!found) throw notFound('Attachment');
  const within = inOrganization(ctx, organizationUid);
  if (within.role !== 'admin' && found.uploadedBy !== ctx.principal.user.id) {
    throw new AppError(
      'forbidden',
      'Only an admin, or the member who uploaded it, may delete this attachment',
    );
  }
  return deps.db.transaction(async (tx) => {
    const row = await repo.deleteAttachment(tx, organizationUid, invoice.uid, attachmentUid);
    if (!row) throw notFound('Attachment');
    const view = deletedView(row);
    await recordAuditEvent(tx, within, {
      organizationUid,
      action: 'attachment.deleted',
      entityUid: row.uid,
      parent: { type: 'invoice', uid: invoice.uid },
      changes: changesBetween(view, null, { omit: ['invoice_uid'] }),
    });
    await scheduleObjectDelete(tx, deps.jobs, { organizationUid, key: row.storageKey });
    return view;
  });
}
