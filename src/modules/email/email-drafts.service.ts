import { afterCommit } from '../../platform/db/request-scope.ts';
import crypto from 'node:crypto';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound, validationFailed } from '../../platform/http/errors.ts';
import { offsetOf, parseSort, type PageRequest } from '../../platform/http/pagination.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { sanitizeFilename, type ObjectStorage } from '../../platform/storage/storage.ts';
import { scheduleObjectDelete } from '../../platform/storage/object-deletes.ts';
import { findAccount } from './email-accounts.repository.ts';
import * as repo from './email-drafts.repository.ts';
import { MAX_ATTACHMENT_BYTES, type ListDraftsQueryT, type SaveDraftBodyT } from './email-drafts.schemas.ts';
import { DRAFT_STATUSES, type DraftStatus, type StoredAttachment } from './email-drafts.tables.ts';
import { EMAIL_SEND_QUEUE, scheduleSend } from './email-sending.ts';
import { changesBetween, recordAuditEvent, recordUpdate } from '../audit/audit.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import { toDraftView, type EmailDraftView } from './email-draft-view.ts';

export interface EmailDraftDeps {
  db: Db;
  jobs: Jobs;
  storage: ObjectStorage;
  /** Told when a job or an object could not be removed after the change committed. */
  onCleanupError?: (what: string, error: unknown) => void;
}

export { toDraftView, type EmailDraftView };

/**
 * What an email's audit events show: who it goes to, what it is about, when and how it goes out, and
 * its attachments by name. The bodies stay on the draft (they are the bulk of it); storage keys and the
 * send bookkeeping are left out.
 */
function auditFields(row: repo.EmailDraftRow) {
  const { body_text: _text, body_html: _html, ...fields } = toDraftView(row);
  return {
    ...fields,
    attachments: row.attachments.map((a) => ({
      filename: a.filename,
      content_type: a.content_type,
      size: a.size,
    })),
  };
}

/**
 * `email_draft.scheduled`: the email has a send job for its `planned_send_at`, created now (a draft
 * saved with a time, a new time, or a failed email saved again to retry it).
 */
async function emitScheduled(
  tx: DbOrTx,
  jobs: Jobs,
  row: repo.EmailDraftRow,
  previousPlannedSendAt: Date | null,
): Promise<void> {
  await emitEvent(
    tx,
    jobs,
    { organizationUid: row.organizationUid },
    'email_draft.scheduled',
    { type: 'email_draft', uid: row.uid },
    {
      email_draft: toDraftView(row),
      previous_planned_send_at: previousPlannedSendAt?.toISOString() ?? null,
    },
  );
}

/** Strict base64 (whitespace between the characters allowed, as MIME wraps it). */
function decodeBase64(field: string, data: string): Buffer {
  const clean = data.replace(/\s+/g, '');
  if (clean.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) {
    throw validationFailed(field, `${field} is not valid base64`);
  }
  return Buffer.from(clean, 'base64');
}

type AttachmentInput = NonNullable<SaveDraftBodyT['attachments']>[number];

/** Decodes every attachment before anything is stored: one bad one → 422 and nothing written. */
function decodeAttachments(inputs: AttachmentInput[]) {
  const decoded = inputs.map((a, i) => ({
    filename: a.filename,
    contentType: a.content_type,
    bytes: decodeBase64(`attachments[${i}].data_base64`, a.data_base64),
  }));
  const total = decoded.reduce((sum, a) => sum + a.bytes.length, 0);
  if (total > MAX_ATTACHMENT_BYTES) {
    throw validationFailed('attachments', `attachments exceed ${MAX_ATTACHMENT_BYTES} bytes in total`);
  }
  return decoded;
}

/** `<organization>/email-drafts/<draft>/<attachment>/<file name>`; objects first, then the row. */
async function storeAttachments(
  storage: ObjectStorage,
  organizationUid: string,
  draftUid: string,
  inputs: AttachmentInput[],
): Promise<StoredAttachment[]> {
  const stored: StoredAttachment[] = [];
  try {
    for (const a of decodeAttachments(inputs)) {
      const key = `${organizationUid}/email-drafts/${draftUid}/${crypto.randomUUID()}/${sanitizeFilename(a.filename)}`;
      await storage.putObject(key, a.bytes, { contentType: a.contentType, contentLength: a.bytes.length });
      stored.push({
        filename: a.filename,
        content_type: a.contentType,
        size: a.bytes.length,
        storage_key: key,
      });
    }
  } catch (error) {
    await removeObjects({ storage }, stored);
    throw error;
  }
  return stored;
}

async function removeObjects(
  deps: Pick<EmailDraftDeps, 'storage' | 'onCleanupError'>,
  attachments: StoredAttachment[],
) {
  for (const a of attachments) {
    try {
      await deps.storage.deleteObject(a.storage_key);
    } catch (error) {
      deps.onCleanupError?.(`object ${a.storage_key}`, error);
    }
  }
}

/** After commit: a stale job would do nothing anyway (it re-checks the draft), so this is tidying. */
async function cancelJob(deps: EmailDraftDeps, jobId: string | null) {
  if (!jobId) return;
  try {
    await deps.jobs.cancel(EMAIL_SEND_QUEUE, jobId);
  } catch (error) {
    deps.onCleanupError?.(`job ${jobId}`, error);
  }
}

async function accountOf(deps: EmailDraftDeps, organizationUid: string, accountUid: string) {
  const account = await findAccount(deps.db, [organizationUid], accountUid);
  if (!account) {
    throw validationFailed('from_account_id', 'from_account_id is not an email account of this organization');
  }
  return account;
}

const planned = (value: string | null | undefined) =>
  value === undefined ? undefined : value === null ? null : new Date(value);

/** Saving is allowed until the email is on its way: `sending`, `sent`, `canceled` → 409. */
function assertEditable(status: DraftStatus, action: 'changed' | 'canceled') {
  if (status === 'sending') {
    throw new AppError('invalid_state', `The email is being sent and can no longer be ${action}`);
  }
  if (status === 'sent' || status === 'canceled') {
    throw new AppError('invalid_state', `A ${status} email cannot be ${action}`);
  }
}

/** `POST /api/email/drafts` without `uid`. */
export async function createDraft(
  deps: EmailDraftDeps,
  ctx: RequestContext,
  body: SaveDraftBodyT,
): Promise<EmailDraftView> {
  if (!body.from_account_id) throw validationFailed('from_account_id', 'from_account_id is required');
  const account = await accountOf(deps, ctx.organizationUid, body.from_account_id);
  const uid = crypto.randomUUID();
  const attachments = await storeAttachments(deps.storage, ctx.organizationUid, uid, body.attachments ?? []);
  const plannedSendAt = planned(body.planned_send_at) ?? null;
  try {
    const row = await deps.db.transaction(async (tx) => {
      const sendJobId = plannedSendAt
        ? await scheduleSend(
            tx,
            deps.jobs,
            { organizationUid: ctx.organizationUid, uid, plannedSendAt },
            ctx.actor,
          )
        : null;
      const inserted = await repo.insertDraft(tx, {
        uid,
        organizationUid: ctx.organizationUid,
        fromAccountUid: account.uid,
        fromEmail: account.email,
        to: body.to ?? [],
        cc: body.cc ?? [],
        bcc: body.bcc ?? [],
        subject: body.subject ?? '',
        bodyText: body.body_text ?? '',
        bodyHtml: body.body_html ?? '',
        attachments,
        contextType: body.context_type ?? null,
        contextId: body.context_id ?? null,
        plannedSendAt,
        sendJobId,
      });
      await recordAuditEvent(tx, ctx, {
        organizationUid: inserted.organizationUid,
        action: 'email.created',
        entityUid: inserted.uid,
        changes: changesBetween(null, auditFields(inserted)),
      });
      if (sendJobId) await emitScheduled(tx, deps.jobs, inserted, null);
      return inserted;
    });
    return toDraftView(row);
  } catch (error) {
    await removeObjects(deps, attachments);
    throw error;
  }
}

/**
 * `POST /api/email/drafts` with `uid`: only the fields sent change. A `failed` email becomes a draft
 * again (saving it is how it is retried). A new `planned_send_at` replaces the send job in the same
 * transaction; the old job is cancelled after commit.
 */
export async function updateDraft(
  deps: EmailDraftDeps,
  ctx: RequestContext,
  uid: string,
  body: SaveDraftBodyT,
): Promise<EmailDraftView> {
  const existing = await repo.findDraft(deps.db, memberOrganizationUids(ctx), uid);
  if (!existing) throw notFound('Email draft');
  assertEditable(existing.status, 'changed');
  const organizationUid = existing.organizationUid;
  const account = body.from_account_id
    ? await accountOf(deps, organizationUid, body.from_account_id)
    : undefined;
  const attachments = body.attachments
    ? await storeAttachments(deps.storage, organizationUid, uid, body.attachments)
    : undefined;
  let replaced: Superseded | undefined;
  let row: repo.EmailDraftRow | undefined;
  try {
    row = await deps.db.transaction(async (tx) => {
      // Locked, and checked again: the worker may have started sending since the read above.
      const current = await repo.findDraft(tx, [organizationUid], uid, { forUpdate: true });
      if (!current) throw notFound('Email draft');
      assertEditable(current.status, 'changed');
      const plannedSendAt = planned(body.planned_send_at);
      const nextPlanned = plannedSendAt === undefined ? current.plannedSendAt : plannedSendAt;
      const timeChanged = nextPlanned?.getTime() !== current.plannedSendAt?.getTime();
      const retried = current.status === 'failed';
      let sendJobId = current.sendJobId;
      if (timeChanged || retried) {
        sendJobId = nextPlanned
          ? await scheduleSend(tx, deps.jobs, { organizationUid, uid, plannedSendAt: nextPlanned }, ctx.actor)
          : null;
      }
      replaced = {
        jobId: sendJobId !== current.sendJobId ? current.sendJobId : null,
        attachments: attachments ? current.attachments : [],
      };
      await scheduleRemovals(tx, deps.jobs, organizationUid, replaced.attachments);
      const updated = await repo.updateDraft(tx, organizationUid, uid, {
        ...(account ? { fromAccountUid: account.uid, fromEmail: account.email } : {}),
        ...(body.to !== undefined ? { to: body.to } : {}),
        ...(body.cc !== undefined ? { cc: body.cc } : {}),
        ...(body.bcc !== undefined ? { bcc: body.bcc } : {}),
        ...(body.subject !== undefined ? { subject: body.subject } : {}),
        ...(body.body_text !== undefined ? { bodyText: body.body_text } : {}),
        ...(body.body_html !== undefined ? { bodyHtml: body.body_html } : {}),
        ...(attachments ? { attachments } : {}),
        ...(body.context_type !== undefined ? { contextType: body.context_type } : {}),
        ...(body.context_id !== undefined ? { contextId: body.context_id } : {}),
        ...(plannedSendAt !== undefined ? { plannedSendAt } : {}),
        ...(retried
          ? { status: 'draft' as const, error: null, messageId: null, transport: null, sentAt: null }
          : {}),
        sendJobId,
      });
      await recordUpdate(tx, ctx, {
        organizationUid,
        action: 'email.updated',
        entityUid: uid,
        before: auditFields(current),
        after: auditFields(updated!),
      });
      // A new send time (or a failed email saved again to retry): it goes out at that time now.
      if (sendJobId && sendJobId !== current.sendJobId) {
        await emitScheduled(tx, deps.jobs, updated!, current.plannedSendAt);
      }
      return updated;
    });
  } catch (error) {
    if (attachments) await removeObjects(deps, attachments);
    throw error;
  }
  await cleanUp(deps, replaced);
  return toDraftView(row!);
}

/** What a committed change left behind: the job it replaced, the objects it no longer points at. */
interface Superseded {
  jobId: string | null;
  attachments: StoredAttachment[];
}

/**
 * The objects a change stops pointing at are removed by the durable delete job, enqueued in the
 * change's transaction (platform/storage/object-deletes.ts): a crash after the commit or a storage
 * outage does not leave them behind.
 */
async function scheduleRemovals(
  tx: DbOrTx,
  jobs: Jobs,
  organizationUid: string,
  attachments: StoredAttachment[],
): Promise<void> {
  for (const a of attachments) await scheduleObjectDelete(tx, jobs, { organizationUid, key: a.storage_key });
}

async function cleanUp(deps: EmailDraftDeps, replaced: Superseded | undefined) {
  if (!replaced) return;
  // Only once the change has committed: a request's unit of work may still roll it back.
  await afterCommit(() => cancelJob(deps, replaced.jobId));
}

export async function getDraft(db: Db, ctx: RequestContext, uid: string): Promise<EmailDraftView> {
  const row = await repo.findDraft(db, memberOrganizationUids(ctx), uid);
  if (!row) throw notFound('Email draft');
  return toDraftView(row);
}

/** `status=draft,failed` → the statuses; an unknown one is 400 naming the allowed ones. */
function statusList(value: string | undefined): DraftStatus[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const items = value.split(',').map((s) => s.trim());
  for (const item of items) {
    if (!(DRAFT_STATUSES as readonly string[]).includes(item)) {
      throw new AppError(
        'invalid_parameter',
        `Unknown status "${item}"; one of ${DRAFT_STATUSES.join(', ')}`,
        [{ field: 'status', message: `must be a comma-separated list of ${DRAFT_STATUSES.join(', ')}` }],
      );
    }
  }
  return items as DraftStatus[];
}

/**
 * `GET /api/email/drafts`: the organization's emails in every status, as `GET /api/email/drafts/{uid}`
 * shows each. Members see them all, as they may read, save and cancel any of them by uid.
 */
export async function listDrafts(db: Db, ctx: RequestContext, query: ListDraftsQueryT, page: PageRequest) {
  const filters: repo.DraftFilters = {
    statuses: statusList(query.status),
    contextType: query.context_type,
    contextId: query.context_id,
    q: query.q?.trim() || undefined,
    scheduled: query.scheduled,
  };
  const sort = parseSort<repo.DraftSortField>(query.sort, '-updated_at');
  const { rows, total } = await repo.listDrafts(db, ctx.organizationUid, filters, sort, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(toDraftView), total };
}

/** `DELETE /api/email/drafts/{uid}`: → `canceled`; its job is dropped and its attachments removed. */
export async function cancelDraft(
  deps: EmailDraftDeps,
  ctx: RequestContext,
  uid: string,
): Promise<EmailDraftView> {
  const existing = await repo.findDraft(deps.db, memberOrganizationUids(ctx), uid);
  if (!existing) throw notFound('Email draft');
  assertEditable(existing.status, 'canceled');
  let replaced: Superseded | undefined;
  const row = await deps.db.transaction(async (tx) => {
    const current = await repo.findDraft(tx, [existing.organizationUid], uid, { forUpdate: true });
    if (!current) throw notFound('Email draft');
    assertEditable(current.status, 'canceled');
    replaced = { jobId: current.sendJobId, attachments: current.attachments };
    await scheduleRemovals(tx, deps.jobs, current.organizationUid, current.attachments);
    const canceled = await repo.updateDraft(tx, current.organizationUid, uid, {
      status: 'canceled',
      sendJobId: null,
      attachments: [],
    });
    await recordAuditEvent(tx, ctx, {
      organizationUid: current.organizationUid,
      action: 'email.canceled',
      entityUid: uid,
      changes: changesBetween(auditFields(current), auditFields(canceled!)),
    });
    return canceled;
  });
  await cleanUp(deps, replaced);
  return toDraftView(row!);
}
