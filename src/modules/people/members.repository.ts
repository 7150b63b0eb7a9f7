import { and, asc, count, eq, inArray, max, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { asService } from '../../platform/db/session-role.ts';
import { apiKeys } from '../api-keys/api-keys.tables.ts';
import { memberships, users } from '../tenancy/tenancy.tables.ts';
import { userSessions } from './sign-in.tables.ts';

export interface MemberRow {
  userUid: string;
  userId: number;
  email: string;
  fullName: string;
  avatarUrl: string | null;
  role: 'admin' | 'member';
  joinedAt: Date;
  /** The latest `last_used_at` of the member's keys made in this organization. */
  keysLastUsedAt: Date | null;
}

const memberColumns = {
  userUid: memberships.userUid,
  userId: users.id,
  email: users.email,
  fullName: users.fullName,
  avatarUrl: users.avatarUrl,
  role: memberships.role,
  joinedAt: memberships.createdAt,
  keysLastUsedAt: sql<Date | null>`(
    select max(${apiKeys.lastUsedAt}) from ${apiKeys}
     where ${apiKeys.organizationUid} = ${memberships.organizationUid}
       and ${apiKeys.userUid} = ${memberships.userUid})`.mapWith(apiKeys.lastUsedAt),
};

/** The organization's members, first joined first. */
export async function listMembers(
  db: DbOrTx,
  organizationUid: string,
  options: { role?: 'admin' | 'member' | undefined; limit: number; offset: number },
): Promise<{ rows: MemberRow[]; total: number }> {
  const where = and(
    eq(memberships.organizationUid, organizationUid),
    options.role ? eq(memberships.role, options.role) : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select(memberColumns)
      .from(memberships)
      .innerJoin(users, eq(users.uid, memberships.userUid))
      .where(where)
      .orderBy(asc(memberships.createdAt), asc(memberships.userUid))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(memberships).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

export async function findMember(
  db: DbOrTx,
  organizationUid: string,
  userUid: string,
): Promise<MemberRow | undefined> {
  const [row] = await db
    .select(memberColumns)
    .from(memberships)
    .innerJoin(users, eq(users.uid, memberships.userUid))
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)));
  return row;
}

/**
 * The latest `last_seen_at` of each user's sign-in sessions. Sessions are a user's, not an
 * organization's: the tenant role has no grant on them (migration 0013), so this read steps out as the
 * service, and is bounded by the member uids the caller's organization already returned.
 */
export async function sessionsLastSeen(db: DbOrTx, userUids: string[]): Promise<Map<string, Date>> {
  if (userUids.length === 0) return new Map();
  // Awaited inside: a query builder runs when awaited, and must run in the service's context.
  const rows = await asService(async () => {
    return await db
      .select({ userUid: userSessions.userUid, lastSeenAt: max(userSessions.lastSeenAt) })
      .from(userSessions)
      .where(inArray(userSessions.userUid, userUids))
      .groupBy(userSessions.userUid);
  });
  return new Map(rows.flatMap((r) => (r.lastSeenAt ? [[r.userUid, r.lastSeenAt] as const] : [])));
}
