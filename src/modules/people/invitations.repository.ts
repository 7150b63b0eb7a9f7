import { and, count, desc, eq, getTableColumns, isNull, sql, type SQL } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../../platform/db/client.ts';
import { organizations, users } from '../tenancy/tenancy.tables.ts';
import { invitations, type InvitationStatus } from './invitations.tables.ts';

export type InvitationRow = typeof invitations.$inferSelect;

/**
 * An invitation's status by the database clock (as a key's expiry is judged), so every instance agrees.
 * Accepted and revoked are final; an open one is expired from `expires_at` on.
 */
const statusSql = sql<InvitationStatus>`case
  when ${invitations.acceptedAt} is not null then 'accepted'
  when ${invitations.revokedAt} is not null then 'revoked'
  when ${invitations.expiresAt} <= now() then 'expired'
  else 'pending' end`;

const statusCondition: Record<InvitationStatus, SQL> = {
  accepted: sql`${invitations.acceptedAt} is not null`,
  revoked: sql`${invitations.acceptedAt} is null and ${invitations.revokedAt} is not null`,
  expired: sql`${invitations.acceptedAt} is null and ${invitations.revokedAt} is null and ${invitations.expiresAt} <= now()`,
  pending: sql`${invitations.acceptedAt} is null and ${invitations.revokedAt} is null and ${invitations.expiresAt} > now()`,
};

export type InvitationWithStatus = InvitationRow & { status: InvitationStatus };

const withStatus = { ...getTableColumns(invitations), status: statusSql };

export async function insertInvitation(
  db: DbOrTx,
  values: Pick<
    typeof invitations.$inferInsert,
    'organizationUid' | 'email' | 'role' | 'tokenHash' | 'invitedByUserUid' | 'expiresAt'
  >,
): Promise<InvitationWithStatus> {
  const [row] = await db.insert(invitations).values(values).returning(withStatus);
  return row!;
}

export async function findInvitation(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<InvitationWithStatus | undefined> {
  const query = db
    .select(withStatus)
    .from(invitations)
    .where(and(eq(invitations.organizationUid, organizationUid), eq(invitations.uid, uid)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** The open (neither accepted nor revoked) invitation of an address, expired or not, locked for the invite. */
export async function findOpenInvitation(
  db: DbOrTx,
  organizationUid: string,
  email: string,
): Promise<InvitationWithStatus | undefined> {
  const [row] = await db
    .select(withStatus)
    .from(invitations)
    .where(
      and(
        eq(invitations.organizationUid, organizationUid),
        eq(invitations.email, email),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
      ),
    )
    .for('update');
  return row;
}

export async function listInvitations(
  db: DbOrTx,
  organizationUid: string,
  options: { status?: InvitationStatus | undefined; limit: number; offset: number },
): Promise<{ rows: InvitationWithStatus[]; total: number }> {
  const where = and(
    eq(invitations.organizationUid, organizationUid),
    options.status ? statusCondition[options.status] : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select(withStatus)
      .from(invitations)
      .where(where)
      .orderBy(desc(invitations.createdAt), desc(invitations.uid))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(invitations).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

/** A new token and expiry for an open invitation (the old link stops working): resend. */
export async function renewInvitation(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: { tokenHash: string; expiresAt: Date },
): Promise<InvitationWithStatus | undefined> {
  return updateOpen(db, organizationUid, uid, { ...values, lastSentAt: sql`now()` });
}

/** Revokes an open invitation; an already revoked one keeps its first `revoked_at`. */
export async function revokeInvitation(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<InvitationWithStatus | undefined> {
  return updateOpen(db, organizationUid, uid, { revokedAt: sql`now()` });
}

/** Marks an open invitation accepted; of two concurrent acceptances only one gets a row back. */
export async function markAccepted(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  userUid: string,
): Promise<InvitationWithStatus | undefined> {
  return updateOpen(db, organizationUid, uid, { acceptedAt: sql`now()`, acceptedByUserUid: userUid });
}

export interface PresentedInvitation extends InvitationWithStatus {
  organizationName: string;
  invitedByName: string | null;
  accountExists: boolean;
}

/**
 * The invitation a presented token names, found by the token's hash alone (unique index), with what the
 * person accepting it needs to see. The public routes know no organization before this read, so the
 * invitations service runs it as the service (`asService`).
 */
export async function findByTokenHash(
  db: DbOrTx,
  tokenHash: string,
  options: { forUpdate?: boolean } = {},
): Promise<PresentedInvitation | undefined> {
  const inviter = sql<string | null>`(
    select nullif(${users.fullName}, '') from ${users} where ${users.uid} = ${invitations.invitedByUserUid})`;
  const accountExists = sql<boolean>`exists (select 1 from ${users} where ${users.email} = ${invitations.email})`;
  const query = db
    .select({
      ...withStatus,
      organizationName: organizations.name,
      invitedByName: inviter,
      accountExists,
    })
    .from(invitations)
    .innerJoin(organizations, eq(organizations.uid, invitations.organizationUid))
    .where(eq(invitations.tokenHash, tokenHash));
  const [row] = options.forUpdate ? await query.for('update', { of: invitations }) : await query;
  return row;
}

/** The password of a user created by accepting an invitation (the people module's own table). */
/** Sets `values` on the invitation if it is still open (neither accepted nor revoked). */
async function updateOpen(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: PgUpdateSetSource<typeof invitations>,
): Promise<InvitationWithStatus | undefined> {
  const [row] = await db
    .update(invitations)
    .set({ ...values, updatedAt: sql`now()` })
    .where(
      and(
        eq(invitations.organizationUid, organizationUid),
        eq(invitations.uid, uid),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
      ),
    )
    .returning(withStatus);
  return row;
}
