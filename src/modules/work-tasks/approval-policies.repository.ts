import { and, desc, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { memberships } from '../tenancy/tenancy.tables.ts';
import { approvalPolicies } from './approval-policies.tables.ts';

export type PolicyRow = typeof approvalPolicies.$inferSelect;
export type NewPolicy = typeof approvalPolicies.$inferInsert;

const one = (organizationUid: string, uid: string) =>
  and(eq(approvalPolicies.organizationUid, organizationUid), eq(approvalPolicies.uid, uid));

export async function insertPolicy(db: DbOrTx, values: NewPolicy): Promise<PolicyRow> {
  const [row] = await db.insert(approvalPolicies).values(values).returning();
  return row!;
}

export async function findPolicy(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<PolicyRow | undefined> {
  const query = db.select().from(approvalPolicies).where(one(organizationUid, uid));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** Newest first, on the (organization, created_at desc, uid desc) index. */
export async function listPolicies(
  db: DbOrTx,
  organizationUid: string,
  page: { limit: number; offset: number },
): Promise<{ rows: PolicyRow[]; total: number }> {
  const where = eq(approvalPolicies.organizationUid, organizationUid);
  const rows = await db
    .select()
    .from(approvalPolicies)
    .where(where)
    .orderBy(desc(approvalPolicies.createdAt), desc(approvalPolicies.uid))
    .limit(page.limit)
    .offset(page.offset);
  const [count] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(approvalPolicies)
    .where(where);
  return { rows, total: Number(count?.n ?? 0) };
}

export async function updatePolicy(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<NewPolicy>,
): Promise<PolicyRow | undefined> {
  const [row] = await db
    .update(approvalPolicies)
    .set({ ...values, updatedAt: sql`now()` })
    .where(one(organizationUid, uid))
    .returning();
  return row;
}

export async function deletePolicy(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<PolicyRow | undefined> {
  const [row] = await db.delete(approvalPolicies).where(one(organizationUid, uid)).returning();
  return row;
}

/** The policies that could govern an approval of this agent: its own and the organization-wide ones. */
export async function policiesForAgent(
  db: DbOrTx,
  organizationUid: string,
  agentUid: string,
): Promise<PolicyRow[]> {
  return db
    .select()
    .from(approvalPolicies)
    .where(
      and(
        eq(approvalPolicies.organizationUid, organizationUid),
        or(isNull(approvalPolicies.agentUid), eq(approvalPolicies.agentUid, agentUid)),
      ),
    );
}

/** Which of these users are members of the organization. */
export async function membersAmong(
  db: DbOrTx,
  organizationUid: string,
  userUids: string[],
): Promise<Set<string>> {
  if (userUids.length === 0) return new Set();
  const rows = await db
    .select({ userUid: memberships.userUid })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), inArray(memberships.userUid, userUids)));
  return new Set(rows.map((r) => r.userUid));
}
