import { and, asc, eq, gt, inArray, lt, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { invoices } from '../invoices/invoices.tables.ts';
import { emailAccounts } from '../email/email-accounts.tables.ts';
import { emailDrafts } from '../email/email-drafts.tables.ts';
import { workTaskContextEntities, workTasks } from '../work-tasks/work-tasks.tables.ts';
import { agentRuns } from './agents.tables.ts';

export type CollectibleInvoice = Pick<
  typeof invoices.$inferSelect,
  'uid' | 'invoiceNumber' | 'clientPartyUid' | 'dueDate' | 'amountRemainingCents' | 'currency' | 'status'
>;

const columns = {
  uid: invoices.uid,
  invoiceNumber: invoices.invoiceNumber,
  clientPartyUid: invoices.clientPartyUid,
  dueDate: invoices.dueDate,
  amountRemainingCents: invoices.amountRemainingCents,
  currency: invoices.currency,
  status: invoices.status,
};

/** The first instant of `now`'s UTC day: an invoice is past due once its due date is before it. */
export function startOfUtcDay(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/**
 * Open receivables with money left, past due (at least one day overdue, as `overdue_days` counts),
 * oldest due date first (CONTRACT §5). `after` continues a listing after the last invoice seen.
 */
export async function listOverdueReceivables(
  db: DbOrTx,
  organizationUid: string,
  now: Date,
  options: {
    clientPartyUid?: string;
    limit: number;
    after?: Pick<CollectibleInvoice, 'dueDate' | 'uid'>;
  },
): Promise<CollectibleInvoice[]> {
  const after = options.after;
  return db
    .select(columns)
    .from(invoices)
    .where(
      and(
        eq(invoices.organizationUid, organizationUid),
        eq(invoices.invoiceType, 'ACCOUNTS_RECEIVABLE'),
        eq(invoices.status, 'open'),
        gt(invoices.amountRemainingCents, 0),
        lt(invoices.dueDate, startOfUtcDay(now)),
        ...(options.clientPartyUid ? [eq(invoices.clientPartyUid, options.clientPartyUid)] : []),
        ...(after?.dueDate
          ? [
              or(
                gt(invoices.dueDate, after.dueDate),
                and(eq(invoices.dueDate, after.dueDate), gt(invoices.uid, after.uid)),
              )!,
            ]
          : []),
      ),
    )
    .orderBy(asc(invoices.dueDate), asc(invoices.uid))
    .limit(options.limit);
}

/** Locks the invoice row for the rest of the transaction: one agent decision per invoice at a time. */
export async function lockInvoice(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<CollectibleInvoice | undefined> {
  const [row] = await db
    .select(columns)
    .from(invoices)
    .where(and(eq(invoices.organizationUid, organizationUid), eq(invoices.uid, uid)))
    .for('update');
  return row;
}

export async function findInvoices(db: DbOrTx, organizationUid: string, uids: string[]) {
  if (uids.length === 0) return [];
  return db
    .select(columns)
    .from(invoices)
    .where(and(eq(invoices.organizationUid, organizationUid), inArray(invoices.uid, uids)));
}

/** When a reminder about this invoice was last sent or scheduled (drafts in context of the invoice). */
export async function lastReminderAt(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<Date | null> {
  const [row] = await db
    .select({ at: sql<Date | null>`max(coalesce(${emailDrafts.sentAt}, ${emailDrafts.createdAt}))` })
    .from(emailDrafts)
    .where(
      and(
        eq(emailDrafts.organizationUid, organizationUid),
        eq(emailDrafts.contextType, 'invoice'),
        eq(emailDrafts.contextId, invoiceUid),
        inArray(emailDrafts.status, ['draft', 'sending', 'sent']),
      ),
    );
  return row?.at ? new Date(row.at) : null;
}

/**
 * Whether a reminder approved for this invoice is still on its way: its follow-up run has not ended.
 * (Until it sends, no draft exists for `lastReminderAt` to see.)
 */
export async function hasApprovedReminderPending(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<boolean> {
  const [row] = await db
    .select({ uid: agentRuns.uid })
    .from(workTaskContextEntities)
    .innerJoin(
      workTasks,
      and(
        eq(workTasks.organizationUid, workTaskContextEntities.organizationUid),
        eq(workTasks.uid, workTaskContextEntities.taskUid),
      ),
    )
    .innerJoin(
      agentRuns,
      and(eq(agentRuns.organizationUid, workTasks.organizationUid), eq(agentRuns.taskUid, workTasks.uid)),
    )
    .where(
      and(
        eq(workTaskContextEntities.organizationUid, organizationUid),
        eq(workTaskContextEntities.entityType, 'invoice'),
        eq(workTaskContextEntities.entityUid, invoiceUid),
        eq(workTasks.type, 'hil_approval'),
        eq(workTasks.resolution, 'approved'),
        inArray(agentRuns.status, ['pending', 'running']),
      ),
    )
    .limit(1);
  return row !== undefined;
}

/** The organization's default sender: its first email account (CONTRACT §5). */
export async function firstEmailAccount(db: DbOrTx, organizationUid: string) {
  const [row] = await db
    .select({ uid: emailAccounts.uid, email: emailAccounts.email })
    .from(emailAccounts)
    .where(eq(emailAccounts.organizationUid, organizationUid))
    .orderBy(asc(emailAccounts.createdAt), asc(emailAccounts.uid))
    .limit(1);
  return row;
}
