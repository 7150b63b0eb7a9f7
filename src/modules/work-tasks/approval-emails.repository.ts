import { and, asc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { memberships, organizations, users } from '../tenancy/tenancy.tables.ts';
import {
  approvalEmailRecipients,
  approvalLinkUses,
  type ApprovalEmailStatus,
} from './approval-emails.tables.ts';

export type RecipientRow = typeof approvalEmailRecipients.$inferSelect;
export type LinkUseRow = typeof approvalLinkUses.$inferSelect;

/** The organization's members who turned approval emails on, by user uid. */
export async function optedInMembers(
  db: DbOrTx,
  organizationUid: string,
): Promise<{ userUid: string; role: string }[]> {
  return db
    .select({ userUid: memberships.userUid, role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.approvalEmails, true)))
    .orderBy(asc(memberships.userUid));
}

export async function insertRecipients(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  userUids: string[],
): Promise<void> {
  if (userUids.length === 0) return;
  await db
    .insert(approvalEmailRecipients)
    .values(userUids.map((userUid) => ({ organizationUid, taskUid, userUid })))
    .onConflictDoNothing();
}

export async function listRecipients(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  status?: ApprovalEmailStatus,
): Promise<RecipientRow[]> {
  return db
    .select()
    .from(approvalEmailRecipients)
    .where(
      and(
        eq(approvalEmailRecipients.organizationUid, organizationUid),
        eq(approvalEmailRecipients.taskUid, taskUid),
        status ? eq(approvalEmailRecipients.status, status) : undefined,
      ),
    )
    .orderBy(asc(approvalEmailRecipients.userUid));
}

const recipient = (organizationUid: string, taskUid: string, userUid: string) =>
  and(
    eq(approvalEmailRecipients.organizationUid, organizationUid),
    eq(approvalEmailRecipients.taskUid, taskUid),
    eq(approvalEmailRecipients.userUid, userUid),
  );

/**
 * `pending` → `sending`, committed before the message goes: of two jobs (a retry beside a slow first
 * attempt) only one gets the row back.
 */
export async function claimRecipient(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  userUid: string,
): Promise<RecipientRow | undefined> {
  const [row] = await db
    .update(approvalEmailRecipients)
    .set({
      status: 'sending',
      attempts: sql`${approvalEmailRecipients.attempts} + 1`,
      updatedAt: sql`now()`,
    })
    .where(and(recipient(organizationUid, taskUid, userUid), eq(approvalEmailRecipients.status, 'pending')))
    .returning();
  return row;
}

export async function settleRecipient(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  userUid: string,
  values: { status: ApprovalEmailStatus; lastError?: string | null; sentAt?: Date | null },
): Promise<void> {
  await db
    .update(approvalEmailRecipients)
    .set({ ...values, updatedAt: sql`now()` })
    .where(recipient(organizationUid, taskUid, userUid));
}

/** Everyone still waiting for this approval's email: it was decided first. */
export async function skipPendingRecipients(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  reason: string,
): Promise<number> {
  const rows = await db
    .update(approvalEmailRecipients)
    .set({ status: 'skipped', lastError: reason, updatedAt: sql`now()` })
    .where(
      and(
        eq(approvalEmailRecipients.organizationUid, organizationUid),
        eq(approvalEmailRecipients.taskUid, taskUid),
        eq(approvalEmailRecipients.status, 'pending'),
      ),
    )
    .returning({ userUid: approvalEmailRecipients.userUid });
  return rows.length;
}

/** A person's membership as an approver acts with it: their role, the organization's name, who they are. */
export async function findApprover(db: DbOrTx, organizationUid: string, userUid: string) {
  const [row] = await db
    .select({
      organizationUid: memberships.organizationUid,
      organizationName: organizations.name,
      role: memberships.role,
      approvalEmails: memberships.approvalEmails,
      userUid: users.uid,
      userId: users.id,
      email: users.email,
      fullName: users.fullName,
      avatarUrl: users.avatarUrl,
    })
    .from(memberships)
    .innerJoin(users, eq(users.uid, memberships.userUid))
    .innerJoin(organizations, eq(organizations.uid, memberships.organizationUid))
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)));
  return row;
}
export type ApproverRow = NonNullable<Awaited<ReturnType<typeof findApprover>>>;

/** The member of the organization with this email (stored lower-case, as `users.email` always is). */
export async function findApproverUidByEmail(
  db: DbOrTx,
  organizationUid: string,
  email: string,
): Promise<string | undefined> {
  const [row] = await db
    .select({ userUid: users.uid })
    .from(memberships)
    .innerJoin(users, eq(users.uid, memberships.userUid))
    .where(
      and(eq(memberships.organizationUid, organizationUid), eq(users.email, email.trim().toLowerCase())),
    );
  return row?.userUid;
}

/**
 * Records that the link `jti` decided. Undefined when it already had: a second use, or a concurrent
 * first one (which waits on the first's row until that commits or rolls back).
 */
export async function insertLinkUse(
  db: DbOrTx,
  values: typeof approvalLinkUses.$inferInsert,
): Promise<LinkUseRow | undefined> {
  const [row] = await db.insert(approvalLinkUses).values(values).onConflictDoNothing().returning();
  return row;
}

export async function findLinkUse(
  db: DbOrTx,
  organizationUid: string,
  jti: string,
): Promise<LinkUseRow | undefined> {
  const [row] = await db
    .select()
    .from(approvalLinkUses)
    .where(and(eq(approvalLinkUses.organizationUid, organizationUid), eq(approvalLinkUses.jti, jti)));
  return row;
}
