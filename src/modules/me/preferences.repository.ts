import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { memberships } from '../tenancy/tenancy.tables.ts';

/** The caller's own membership settings in one organization; undefined when not a member. */
export async function findPreferences(db: DbOrTx, organizationUid: string, userUid: string) {
  const [row] = await db
    .select({ approvalEmails: memberships.approvalEmails })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)));
  return row;
}

export async function updatePreferences(
  db: DbOrTx,
  organizationUid: string,
  userUid: string,
  values: { approvalEmails: boolean },
) {
  const [row] = await db
    .update(memberships)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)))
    .returning({ approvalEmails: memberships.approvalEmails });
  return row;
}
