import type { SecretBox } from '../../platform/secrets/secret-box.ts';
import { smtpUrlPurpose } from './email-accounts.service.ts';
import { buffer } from 'node:stream/consumers';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import {
  MailerError,
  messageIdForDraft,
  type MailAttachment,
  type Mailer,
  type MailTransports,
  type OutboxMailer,
} from '../../platform/mail/mailer.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import * as repo from './email-drafts.repository.ts';
import type { StoredAttachment } from './email-drafts.tables.ts';
import { ACTOR_TYPES, SYSTEM_ACTOR, type AuditActor } from '../../platform/http/context.ts';
import { changesBetween, recordAuditEvent, type AuditOrigin } from '../audit/audit.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import { toDraftView } from './email-draft-view.ts';

/**
 * Scheduled sending (CONTRACT §3, §6). A draft with `planned_send_at` has one pg-boss job, enqueued in
 * the transaction that saved the time (and replaced when the time changes). The job only ever sends a
 * draft that is still a draft and due *now*, so a stale job — its draft rescheduled, canceled or sent
 * — does nothing. A sweep every minute enqueues a job for any due draft that has none pending.
 *
 * No double send: the attempt is recorded before anything goes out — status `sending`, a Message-ID
 * fixed for the attempt, the mailer it uses, an attempt counter and a lease — and committed. A worker
 * that finds `sending` with a live lease leaves it alone (another worker is on it). One that finds the
 * lease run out knows the attempt died between "recorded" and "finished", and does not send blindly:
 * the outbox is asked whether the file of that Message-ID exists (yes → `sent`; no → nothing went
 * out, send it now); an SMTP server cannot be asked, so the draft becomes `failed` with "outcome
 * unknown, not resent" — a possibly missing email is a smaller harm than a duplicate dunning letter,
 * and the user can check and save it again to send it.
 */
export const EMAIL_SEND_QUEUE = 'remit.email.send';
export const EMAIL_SWEEP_QUEUE = 'remit.email.sweep';

export interface SendJobData {
  organization_uid: string;
  draft_uid: string;
  /** Who scheduled the send: the actor of its `email.sent` event (absent: the system, e.g. the sweep). */
  actor?: { type: AuditActor['type']; uid: string | null; user_uid: string | null } | undefined;
}

/** The actor a send job carries, as JSON. */
export function actorForJob(actor: AuditActor): NonNullable<SendJobData['actor']> {
  return { type: actor.type, uid: actor.uid, user_uid: actor.userUid };
}

/** The actor of a send job's data; anything unexpected is the system. */
export function actorOfJob(data: SendJobData): AuditActor {
  const actor = data.actor;
  if (!actor || !(ACTOR_TYPES as readonly string[]).includes(actor.type)) return SYSTEM_ACTOR;
  return { type: actor.type, uid: actor.uid ?? null, userUid: actor.user_uid ?? null };
}

/** What a send event shows of the draft: how the attempt ended, not its bookkeeping. */
const SEND_FIELDS = (row: repo.EmailDraftRow) => ({
  status: row.status,
  sentAt: row.sentAt,
  error: row.error,
});

export interface Mailers {
  /** The account's SMTP server (its sealed URL), else the operator's `SMTP_URL`, else the outbox. */
  forAccount(account: { uid: string; smtpUrl: string | null }): Mailer;
  /** Asked about attempts that went to the outbox, whatever the account uses now. */
  outbox: OutboxMailer;
}

export interface EmailSendingDeps {
  db: Db;
  /** Where the webhook events of a send's outcome are delivered from. */
  jobs: Jobs;
  storage: ObjectStorage;
  mailers: Mailers;
  /** How long a `sending` attempt is presumed alive; well above the SMTP timeouts (2 min in all). */
  leaseSeconds: number;
}

export const DEFAULT_LEASE_SECONDS = 300;

/** An account's mailer from the process's transports: its sealed SMTP URL opened for this send only. */
export function accountMailers(transports: MailTransports, secrets: SecretBox): Mailers {
  return {
    forAccount: (account) =>
      transports.forSmtpUrl(account.smtpUrl && secrets.open(account.smtpUrl, smtpUrlPurpose(account.uid))),
    outbox: transports.outbox,
  };
}

/** Enqueues the send job inside `tx` (the transaction that saves the time); returns its id. */
export function scheduleSend(
  tx: DbOrTx,
  jobs: Jobs,
  draft: { organizationUid: string; uid: string; plannedSendAt: Date },
  scheduledBy: AuditActor = SYSTEM_ACTOR,
): Promise<string> {
  return jobs.enqueue<SendJobData>(
    tx,
    EMAIL_SEND_QUEUE,
    { organization_uid: draft.organizationUid, draft_uid: draft.uid, actor: actorForJob(scheduledBy) },
    // A retry only happens when the handler throws (the database failed); the handler is idempotent.
    { startAfter: draft.plannedSendAt, retryLimit: 3, retryDelaySeconds: 30 },
  );
}

export type SendJobResult =
  | 'sent'
  | 'failed'
  /** No such draft, or not a draft due now (rescheduled, canceled, already sent): a stale job. */
  | 'skipped'
  /** Another worker holds the attempt's lease. */
  | 'in_progress';

type Attempt = repo.EmailDraftRow & { messageId: string };

/** How the attempt ended, and its `email.sent` or `email.failed` event, in one transaction. */
async function finish(
  deps: EmailSendingDeps,
  origin: AuditOrigin,
  draft: Attempt,
  status: 'sent' | 'failed',
  error: string | null,
): Promise<SendJobResult> {
  await deps.db.transaction(async (tx) => {
    const row = await repo.finishAttempt(tx, draft.organizationUid, draft.uid, draft.messageId, {
      status,
      error,
    });
    // No row: the attempt was finished meanwhile (by another worker), which recorded it.
    if (row) await recordSendEvent(tx, deps.jobs, origin, draft, row);
  });
  return status;
}

/** How a send ended: its audit event and its webhook event (`email_draft.sent` or `.failed`). */
async function recordSendEvent(
  tx: DbOrTx,
  jobs: Jobs,
  origin: AuditOrigin,
  before: repo.EmailDraftRow,
  after: repo.EmailDraftRow,
): Promise<void> {
  const sent = after.status === 'sent';
  await recordAuditEvent(tx, origin, {
    organizationUid: after.organizationUid,
    action: sent ? 'email.sent' : 'email.failed',
    entityUid: after.uid,
    changes: changesBetween(SEND_FIELDS(before), SEND_FIELDS(after)),
  });
  await emitEvent(
    tx,
    jobs,
    { organizationUid: after.organizationUid },
    sent ? 'email_draft.sent' : 'email_draft.failed',
    { type: 'email_draft', uid: after.uid },
    // A sent email may still carry an error: recipients the server refused.
    { email_draft: toDraftView(after), error: after.error },
  );
}

async function loadAttachments(
  storage: ObjectStorage,
  stored: StoredAttachment[],
): Promise<MailAttachment[]> {
  const loaded: MailAttachment[] = [];
  for (const a of stored) {
    const object = await storage.getObject(a.storage_key);
    if (!object) throw new Error(`attachment ${a.filename} is missing from storage`);
    loaded.push({ filename: a.filename, contentType: a.content_type, content: await buffer(object.body) });
  }
  return loaded;
}

/** Sends the recorded attempt and records how it ended. */
async function deliver(
  deps: EmailSendingDeps,
  origin: AuditOrigin,
  draft: Attempt,
  displayName: string,
  mailer: Mailer,
): Promise<SendJobResult> {
  let attachments: MailAttachment[];
  try {
    attachments = await loadAttachments(deps.storage, draft.attachments);
  } catch (error) {
    return finish(deps, origin, draft, 'failed', `not sent: ${(error as Error).message}`);
  }
  try {
    const result = await mailer.send({
      messageId: draft.messageId,
      from: { address: draft.fromEmail, name: displayName || undefined },
      to: draft.to,
      cc: draft.cc,
      bcc: draft.bcc,
      subject: draft.subject,
      text: draft.bodyText,
      html: draft.bodyHtml,
      attachments,
    });
    const rejected = result.rejected.length > 0 ? `rejected recipients: ${result.rejected.join(', ')}` : null;
    return finish(deps, origin, draft, 'sent', rejected);
  } catch (error) {
    const message = error instanceof MailerError ? error.message : `not sent: ${(error as Error).message}`;
    return finish(deps, origin, draft, 'failed', message);
  }
}

/** A `sending` attempt whose worker died: find out what it did before doing anything. */
async function recover(
  deps: EmailSendingDeps,
  origin: AuditOrigin,
  draft: Attempt,
  displayName: string,
  mailer: Mailer,
): Promise<SendJobResult> {
  if (draft.transport === 'outbox') {
    if (await deps.mailers.outbox.wasSent(draft.messageId)) return finish(deps, origin, draft, 'sent', null);
    // No file: nothing went out. Send it now, under the same Message-ID, recording the mailer first.
    if (mailer.kind !== 'outbox') {
      await repo.updateDraft(deps.db, draft.organizationUid, draft.uid, { transport: mailer.kind });
    }
    return deliver(deps, origin, draft, displayName, mailer);
  }
  return finish(
    deps,
    origin,
    draft,
    'failed',
    'SMTP outcome unknown, not resent: the send attempt was interrupted after it started and before ' +
      'its result was recorded; check whether it arrived, and save the draft again to send it',
  );
}

/**
 * The send job: sends the draft if it is (still) due, or finishes an attempt that died. `origin` is who
 * the send's event names: the job (with the actor that scheduled it), or an agent run sending at once.
 */
export async function runSendJob(
  deps: EmailSendingDeps,
  data: SendJobData,
  origin: AuditOrigin = { actor: actorOfJob(data), requestId: null, clientAddress: null },
): Promise<SendJobResult> {
  const found = await repo.findDraftForSending(deps.db, data.organization_uid, data.draft_uid);
  if (!found) return 'skipped';
  const { draft } = found;
  const mailer = deps.mailers.forAccount({ uid: draft.fromAccountUid, smtpUrl: found.smtpUrl });
  if (draft.status === 'draft') {
    const claimed = await repo.claimDraft(deps.db, draft.organizationUid, draft.uid, {
      messageId: messageIdForDraft(draft.uid, draft.fromEmail),
      transport: mailer.kind,
      leaseSeconds: deps.leaseSeconds,
    });
    if (!claimed) return 'skipped';
    return deliver(deps, origin, claimed as Attempt, found.displayName, mailer);
  }
  if (draft.status === 'sending') {
    const retaken = await repo.retakeLease(deps.db, draft.organizationUid, draft.uid, {
      leaseSeconds: deps.leaseSeconds,
    });
    if (!retaken) return 'in_progress';
    if (!retaken.messageId) {
      // Every attempt records its Message-ID before sending; without one, nothing is known of it.
      await deps.db.transaction(async (tx) => {
        const failed = await repo.updateDraft(tx, draft.organizationUid, draft.uid, {
          status: 'failed',
          error: 'send attempt without a Message-ID; outcome unknown, not resent',
          sendingLeaseUntil: null,
        });
        if (failed) await recordSendEvent(tx, deps.jobs, origin, retaken, failed);
      });
      return 'failed';
    }
    return recover(deps, origin, retaken as Attempt, found.displayName, mailer);
  }
  return 'skipped';
}

class ReplacedMeanwhile extends Error {}

/**
 * Belt and braces, every minute: a job for every due draft (and every `sending` attempt whose lease
 * ran out) that has no pending job — a job lost with a restored backup, a queue purged by hand, a
 * time that passed while no worker ran.
 */
export async function sweepEmailDrafts(
  deps: { db: Db; jobs: Jobs },
  options: { limit?: number } = {},
): Promise<{ enqueued: number }> {
  const candidates = await repo.findSweepCandidates(deps.db, EMAIL_SEND_QUEUE, options.limit ?? 100);
  let enqueued = 0;
  for (const candidate of candidates) {
    try {
      await deps.db.transaction(async (tx) => {
        const jobId = await deps.jobs.enqueue<SendJobData>(tx, EMAIL_SEND_QUEUE, {
          organization_uid: candidate.organization_uid,
          draft_uid: candidate.uid,
        });
        const replaced = await repo.replaceSendJob(
          tx,
          candidate.organization_uid,
          candidate.uid,
          candidate.send_job_id,
          jobId,
        );
        // Saved meanwhile with a new job of its own: that one stands.
        if (!replaced) throw new ReplacedMeanwhile();
      });
      enqueued += 1;
    } catch (error) {
      if (!(error instanceof ReplacedMeanwhile)) throw error;
    }
  }
  return { enqueued };
}
