import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { memberships, organizations, users } from './tenancy.tables.ts';
import type { Role } from '../../platform/http/scopes.ts';

export async function insertOrganization(db: DbOrTx, name: string) {
  const [row] = await db.insert(organizations).values({ name }).returning();
  return row!;
}

/** One organization; `forUpdate` locks it for the rest of the transaction (a settings change). */
export async function findOrganization(
  db: DbOrTx,
  organizationUid: string,
  options: { forUpdate?: boolean } = {},
) {
  const query = db.select().from(organizations).where(eq(organizations.uid, organizationUid));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function findUserByEmail(db: DbOrTx, email: string) {
  const [row] = await db.select().from(users).where(eq(users.email, email));
  return row;
}

export async function insertUser(db: DbOrTx, email: string, fullName: string) {
  const [row] = await db.insert(users).values({ email, fullName }).returning();
  return row!;
}

export async function findMembership(db: DbOrTx, organizationUid: string, userUid: string) {
  const [row] = await db
    .select()
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)));
  return row;
}

/** The user's memberships, their default organization first. */
export async function listMembershipsOfUser(db: DbOrTx, userUid: string) {
  return db
    .select()
    .from(memberships)
    .where(eq(memberships.userUid, userUid))
    .orderBy(desc(memberships.isDefault), asc(memberships.createdAt), asc(memberships.organizationUid));
}

export async function insertMembership(
  db: DbOrTx,
  organizationUid: string,
  userUid: string,
  role: Role,
  isDefault: boolean,
) {
  const [row] = await db
    .insert(memberships)
    .values({ organizationUid, userUid, role, isDefault })
    .returning();
  return row!;
}

export async function userHasDefaultMembership(db: DbOrTx, userUid: string): Promise<boolean> {
  const rows = await db
    .select({ one: sql<number>`1` })
    .from(memberships)
    .where(and(eq(memberships.userUid, userUid), eq(memberships.isDefault, true)));
  return rows.length > 0;
}

export async function updateOrganizationSettings(
  db: DbOrTx,
  organizationUid: string,
  values: {
    segregationOfDuties?: boolean;
    requireAdminMfa?: boolean;
    slackChannelId?: string | null;
    approvalLimits?: unknown;
    address?: string;
    taxId?: string | null;
    paymentInstructions?: string;
    searchLanguage?: string;
  },
) {
  const [row] = await db
    .update(organizations)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(organizations.uid, organizationUid))
    .returning();
  return row;
}

/** Which of these users are members of the organization. */
export async function membersAmong(
  db: DbOrTx,
  organizationUid: string,
  userUids: string[],
): Promise<string[]> {
  if (userUids.length === 0) return [];
  const rows = await db
    .select({ userUid: memberships.userUid })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), inArray(memberships.userUid, userUids)));
  return rows.map((r) => r.userUid);
}

/**
 * Locks the organization's admin memberships (FOR UPDATE) and returns their users. Two transactions
 * that each demote or remove an admin queue here; the second re-reads the rows after the first commits
 * and no longer counts the one it demoted.
 */
export async function lockAdminMemberships(db: DbOrTx, organizationUid: string): Promise<string[]> {
  const rows = await db
    .select({ userUid: memberships.userUid })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.role, 'admin')))
    .for('update');
  return rows.map((r) => r.userUid);
}

/** The admins of an organization, by email (whom the service writes to about it). */
export async function listAdminContacts(
  db: DbOrTx,
  organizationUid: string,
): Promise<{ userUid: string; email: string; fullName: string }[]> {
  return db
    .select({ userUid: users.uid, email: users.email, fullName: users.fullName })
    .from(memberships)
    .innerJoin(users, eq(users.uid, memberships.userUid))
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.role, 'admin')))
    .orderBy(asc(users.email));
}

export async function updateMembershipRole(db: DbOrTx, organizationUid: string, userUid: string, role: Role) {
  const [row] = await db
    .update(memberships)
    .set({ role, updatedAt: sql`now()` })
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)))
    .returning();
  return row;
}

export async function deleteMembership(db: DbOrTx, organizationUid: string, userUid: string) {
  const [row] = await db
    .delete(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)))
    .returning();
  return row;
}
