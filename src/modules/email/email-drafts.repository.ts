import { and, count, eq, inArray, isNotNull, lte, sql, type SQL } from 'drizzle-orm';
import { rawQuery, type DbOrTx } from '../../platform/db/client.ts';
import { containsPattern } from '../../platform/db/text-search.ts';
import { PGBOSS_SCHEMA } from '../../platform/jobs/jobs.ts';
import { emailAccounts } from './email-accounts.tables.ts';
import { emailDrafts, type DraftStatus } from './email-drafts.tables.ts';

export type EmailDraftRow = typeof emailDrafts.$inferSelect;
export type EmailDraftInsert = typeof emailDrafts.$inferInsert;

const one = (organizationUid: string, uid: string) =>
  and(eq(emailDrafts.organizationUid, organizationUid), eq(emailDrafts.uid, uid));

export async function insertDraft(db: DbOrTx, values: EmailDraftInsert): Promise<EmailDraftRow> {
  const [row] = await db.insert(emailDrafts).values(values).returning();
  return row!;
}

/** A draft of one of these organizations; `forUpdate` locks it for the rest of the transaction. */
export async function findDraft(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<EmailDraftRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const query = db
    .select()
    .from(emailDrafts)
    .where(and(inArray(emailDrafts.organizationUid, organizationUids), eq(emailDrafts.uid, uid)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function updateDraft(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<EmailDraftInsert>,
): Promise<EmailDraftRow | undefined> {
  const [row] = await db
    .update(emailDrafts)
    .set({ ...values, updatedAt: sql`now()` })
    .where(one(organizationUid, uid))
    .returning();
  return row;
}

export interface DraftFilters {
  statuses?: DraftStatus[] | undefined;
  contextType?: string | undefined;
  contextId?: string | undefined;
  q?: string | undefined;
  scheduled?: boolean | undefined;
}

const DRAFT_SORT_COLUMNS = {
  updated_at: emailDrafts.updatedAt,
  created_at: emailDrafts.createdAt,
  planned_send_at: emailDrafts.plannedSendAt,
  sent_at: emailDrafts.sentAt,
} as const;
export type DraftSortField = keyof typeof DRAFT_SORT_COLUMNS;

/** Waiting for the worker: a draft with a send time (what `scheduled=true` lists). */
const isScheduled = sql`(${emailDrafts.status} = 'draft' and ${emailDrafts.plannedSendAt} is not null)`;

/**
 * One organization's emails, filtered and paged. The default order (newest change first) walks the
 * (organization, updated_at desc, uid desc) index; an invoice's emails the (organization, context)
 * one. `q` matches the subject or any one recipient, its `%`, `_` and `\` taken literally.
 */
export async function listDrafts(
  db: DbOrTx,
  organizationUid: string,
  filters: DraftFilters,
  sort: { field: DraftSortField; descending: boolean },
  page: { limit: number; offset: number },
): Promise<{ rows: EmailDraftRow[]; total: number }> {
  const where: SQL[] = [eq(emailDrafts.organizationUid, organizationUid)];
  if (filters.statuses?.length) where.push(inArray(emailDrafts.status, filters.statuses));
  if (filters.contextType !== undefined) where.push(eq(emailDrafts.contextType, filters.contextType));
  if (filters.contextId !== undefined) where.push(eq(emailDrafts.contextId, filters.contextId));
  if (filters.scheduled !== undefined) where.push(filters.scheduled ? isScheduled : sql`not ${isScheduled}`);
  if (filters.q) {
    const pattern = containsPattern(filters.q);
    where.push(
      sql`(${emailDrafts.subject} ilike ${pattern} or exists (
        select 1 from unnest(${emailDrafts.to} || ${emailDrafts.cc} || ${emailDrafts.bcc}) as recipient
        where recipient ilike ${pattern}))`,
    );
  }
  const column = DRAFT_SORT_COLUMNS[sort.field];
  // `nulls last` both ways (an email not yet sent has no sent_at), as the index is built.
  const direction = sort.descending ? sql`desc nulls last` : sql`asc nulls last`;
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(emailDrafts)
      .where(and(...where))
      .orderBy(sql`${column} ${direction}`, sql`${emailDrafts.uid} ${direction}`)
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ total: count() })
      .from(emailDrafts)
      .where(and(...where)),
  ]);
  return { rows, total: Number(totals?.total ?? 0) };
}

/** The draft with what the sender needs of its account (display name, SMTP server). */
export async function findDraftForSending(db: DbOrTx, organizationUid: string, uid: string) {
  const [row] = await db
    .select({
      draft: emailDrafts,
      displayName: emailAccounts.displayName,
      smtpUrl: emailAccounts.smtpUrl,
    })
    .from(emailDrafts)
    .innerJoin(emailAccounts, eq(emailAccounts.uid, emailDrafts.fromAccountUid))
    .where(one(organizationUid, uid));
  return row;
}

/**
 * Starts a send attempt: `draft` → `sending`, only if the draft is still a draft and due, with its
 * Message-ID, the mailer it uses and a lease, all committed before anything goes out. One statement,
 * so of two workers only one gets the row.
 */
export async function claimDraft(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  attempt: { messageId: string; transport: 'outbox' | 'smtp'; leaseSeconds: number },
): Promise<EmailDraftRow | undefined> {
  const [row] = await db
    .update(emailDrafts)
    .set({
      status: 'sending',
      messageId: attempt.messageId,
      transport: attempt.transport,
      sendAttempts: sql`${emailDrafts.sendAttempts} + 1`,
      sendingLeaseUntil: sql`now() + make_interval(secs => ${attempt.leaseSeconds})`,
      error: null,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        one(organizationUid, uid),
        eq(emailDrafts.status, 'draft'),
        isNotNull(emailDrafts.plannedSendAt),
        lte(emailDrafts.plannedSendAt, sql`now()`),
      ),
    )
    .returning();
  return row;
}

/** Takes over a `sending` attempt whose lease ran out (its worker died); one taker wins. */
export async function retakeLease(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  attempt: { leaseSeconds: number; transport?: 'outbox' | 'smtp' },
): Promise<EmailDraftRow | undefined> {
  const [row] = await db
    .update(emailDrafts)
    .set({
      sendAttempts: sql`${emailDrafts.sendAttempts} + 1`,
      sendingLeaseUntil: sql`now() + make_interval(secs => ${attempt.leaseSeconds})`,
      ...(attempt.transport ? { transport: attempt.transport } : {}),
      updatedAt: sql`now()`,
    })
    .where(
      and(
        one(organizationUid, uid),
        eq(emailDrafts.status, 'sending'),
        lte(emailDrafts.sendingLeaseUntil, sql`now()`),
      ),
    )
    .returning();
  return row;
}

/** Records how the attempt with this Message-ID ended (a no-op if the row moved on meanwhile). */
export async function finishAttempt(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  messageId: string,
  outcome: { status: Extract<DraftStatus, 'sent' | 'failed'>; error: string | null },
): Promise<EmailDraftRow | undefined> {
  const [row] = await db
    .update(emailDrafts)
    .set({
      status: outcome.status,
      error: outcome.error,
      sentAt: outcome.status === 'sent' ? sql`now()` : null,
      sendingLeaseUntil: null,
      updatedAt: sql`now()`,
    })
    .where(
      and(one(organizationUid, uid), eq(emailDrafts.status, 'sending'), eq(emailDrafts.messageId, messageId)),
    )
    .returning();
  return row;
}

export interface SweepCandidate {
  organization_uid: string;
  uid: string;
  send_job_id: string | null;
}

/**
 * Drafts the worker should have picked up and has no pending job for: due drafts, and `sending`
 * attempts whose lease ran out. Each half walks its own partial index.
 */
export async function findSweepCandidates(
  db: DbOrTx,
  queue: string,
  limit: number,
): Promise<SweepCandidate[]> {
  const pendingJob = (states: string) => `not exists (
      select 1 from ${PGBOSS_SCHEMA}.job j
      where j.name = $1 and j.id = d.send_job_id::uuid and j.state in (${states}))`;
  const noPendingJob = pendingJob(`'created', 'retry', 'active'`);
  // An attempt whose lease ran out belongs to a worker that died (the lease outlasts every SMTP
  // timeout); its job still shows 'active' until the queue's own expiry (15 min), which used to keep
  // the draft in 'sending' that long. Only a job that has yet to run stands in the way.
  const noQueuedJob = pendingJob(`'created', 'retry'`);
  return rawQuery<SweepCandidate>(
    db,
    `(select d.organization_uid, d.uid, d.send_job_id from email_drafts d
        where d.status = 'draft' and d.planned_send_at is not null and d.planned_send_at <= now()
          and ${noPendingJob}
        order by d.planned_send_at limit $2)
     union all
     (select d.organization_uid, d.uid, d.send_job_id from email_drafts d
        where d.status = 'sending' and d.sending_lease_until <= now() and ${noQueuedJob}
        order by d.sending_lease_until limit $2)`,
    [queue, limit],
  );
}

/** Points the draft at a new send job, unless another one was set meanwhile. */
export async function replaceSendJob(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  previousJobId: string | null,
  jobId: string,
): Promise<boolean> {
  const rows = await db
    .update(emailDrafts)
    .set({ sendJobId: jobId })
    .where(
      and(
        one(organizationUid, uid),
        previousJobId === null
          ? sql`${emailDrafts.sendJobId} is null`
          : eq(emailDrafts.sendJobId, previousJobId),
      ),
    )
    .returning({ uid: emailDrafts.uid });
  return rows.length > 0;
}
