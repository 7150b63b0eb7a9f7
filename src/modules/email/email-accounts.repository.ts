import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { emailAccounts } from './email-accounts.tables.ts';

export type EmailAccountRow = typeof emailAccounts.$inferSelect;

export async function insertAccount(
  db: DbOrTx,
  values: typeof emailAccounts.$inferInsert,
): Promise<EmailAccountRow> {
  const [row] = await db.insert(emailAccounts).values(values).returning();
  return row!;
}

export async function findAccount(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
): Promise<EmailAccountRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(emailAccounts)
    .where(and(inArray(emailAccounts.organizationUid, organizationUids), eq(emailAccounts.uid, uid)));
  return row;
}

/** Oldest first: the first account is the organization's default sender (CONTRACT §5). */
export async function listAccounts(
  db: DbOrTx,
  organizationUid: string,
  page: { limit: number; offset: number },
): Promise<{ rows: EmailAccountRow[]; total: number }> {
  const where = eq(emailAccounts.organizationUid, organizationUid);
  const rows = await db
    .select()
    .from(emailAccounts)
    .where(where)
    .orderBy(asc(emailAccounts.createdAt), asc(emailAccounts.uid))
    .limit(page.limit)
    .offset(page.offset);
  const [count] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(emailAccounts)
    .where(where);
  return { rows, total: Number(count?.n ?? 0) };
}

/** Every account with an SMTP URL, across organizations: for sealing secrets again (a maintenance pass). */
export async function listAccountsWithSmtp(
  db: DbOrTx,
): Promise<{ uid: string; organizationUid: string; smtpUrl: string }[]> {
  const rows = await db
    .select({
      uid: emailAccounts.uid,
      organizationUid: emailAccounts.organizationUid,
      smtpUrl: emailAccounts.smtpUrl,
    })
    .from(emailAccounts)
    .where(sql`${emailAccounts.smtpUrl} is not null`);
  return rows as { uid: string; organizationUid: string; smtpUrl: string }[];
}

/** Replaces the stored value only if it is still `previous` (another instance may have sealed it). */
export async function replaceSmtpUrl(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  previous: string,
  next: string,
): Promise<boolean> {
  const rows = await db
    .update(emailAccounts)
    .set({ smtpUrl: next })
    .where(
      and(
        eq(emailAccounts.organizationUid, organizationUid),
        eq(emailAccounts.uid, uid),
        eq(emailAccounts.smtpUrl, previous),
      ),
    )
    .returning({ uid: emailAccounts.uid });
  return rows.length === 1;
}
