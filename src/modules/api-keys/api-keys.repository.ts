import { and, count, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { preparedQuery, rawQuery, type Database } from '../../platform/db/client.ts';
import { withConnectionAsIs } from '../../platform/db/session-role.ts';
import { apiKeys } from './api-keys.tables.ts';
import { memberships } from '../tenancy/tenancy.tables.ts';
import type { Role } from '../../platform/http/scopes.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export async function insertApiKey(db: DbOrTx, values: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
  const [row] = await db.insert(apiKeys).values(values).returning();
  return row!;
}

export async function findApiKey(db: DbOrTx, organizationUid: string, uid: string, userUid?: string) {
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(
      and(
        eq(apiKeys.organizationUid, organizationUid),
        eq(apiKeys.uid, uid),
        userUid ? eq(apiKeys.userUid, userUid) : undefined,
      ),
    );
  return row;
}

/** By uid alone, for the operator's CLI (`remit keys revoke`), which works across organizations. */
export async function findApiKeyByUid(db: DbOrTx, uid: string) {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.uid, uid));
  return row;
}

export async function findApiKeyInOrganizations(db: DbOrTx, organizationUids: string[], uid: string) {
  if (organizationUids.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(inArray(apiKeys.organizationUid, organizationUids), eq(apiKeys.uid, uid)));
  return row;
}

export async function listApiKeys(
  db: DbOrTx,
  organizationUid: string,
  options: { userUid?: string | undefined; limit: number; offset: number },
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  const where = and(
    eq(apiKeys.organizationUid, organizationUid),
    options.userUid ? eq(apiKeys.userUid, options.userUid) : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(apiKeys)
      .where(where)
      .orderBy(desc(apiKeys.createdAt), desc(apiKeys.uid))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(apiKeys).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

/** Sets `revoked_at` once; revoking again keeps the first time. */
export async function revokeApiKey(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<ApiKeyRow | undefined> {
  await db
    .update(apiKeys)
    .set({ revokedAt: sql`now()`, updatedAt: sql`now()` })
    .where(
      and(eq(apiKeys.organizationUid, organizationUid), eq(apiKeys.uid, uid), isNull(apiKeys.revokedAt)),
    );
  return findApiKey(db, organizationUid, uid);
}

/** Revokes every live key of one user in one organization; returns how many were revoked. */
export async function revokeKeysOfUser(
  db: DbOrTx,
  organizationUid: string,
  userUid: string,
): Promise<number> {
  const rows = await db
    .update(apiKeys)
    .set({ revokedAt: sql`now()`, updatedAt: sql`now()` })
    .where(
      and(
        eq(apiKeys.organizationUid, organizationUid),
        eq(apiKeys.userUid, userUid),
        isNull(apiKeys.revokedAt),
      ),
    )
    .returning({ uid: apiKeys.uid });
  return rows.length;
}

export interface AuthMembershipRow {
  organization_uid: string;
  organization_name: string;
  role: 'admin' | 'member';
  is_default: boolean;
}

export interface AuthRow {
  key_uid: string;
  key_organization_uid: string;
  key_hash: string;
  scopes: string[] | null;
  expires_at: Date | null;
  is_expired: boolean;
  is_revoked: boolean;
  user_uid: string;
  user_id: number;
  email: string;
  full_name: string;
  avatar_url: string | null;
  auth_version: number;
  /** null when the caller already holds the memberships of `auth_version`. */
  memberships: AuthMembershipRow[] | null;
}

/**
 * Everything authentication needs in one statement: the key by its hash and its user, plus the user's
 * memberships only when they changed since `knownVersion` (the steady state is one indexed read of two
 * rows; the aggregate runs once per change). Expiry is judged by the database clock so every instance
 * agrees.
 */
export async function findKeyForAuthentication(
  database: Database,
  keyHash: string,
  knownVersion: number,
): Promise<AuthRow | undefined> {
  // A function running as its owner (migration 0011): the key is found before the caller's
  // organizations are known, so this read alone is not confined by row-level security.
  const rows = await withConnectionAsIs(() =>
    preparedQuery<AuthRow>(database, 'remit_authenticate_v4', 'select * from remit_authenticate($1, $2)', [
      keyHash,
      knownVersion,
    ]),
  );
  return rows[0];
}

/** At most one write a minute per key, whichever instance saw the use. */
export async function touchLastUsed(db: DbOrTx, keyUids: string[]): Promise<void> {
  if (keyUids.length === 0) return;
  await rawQuery(
    db,
    `update api_keys set last_used_at = now()
      where uid = any($1::uuid[]) and (last_used_at is null or last_used_at < now() - interval '1 minute')`,
    [keyUids],
  );
}

/** The user's role in the organization, or undefined when they are not a member. */
export async function findMemberRole(
  db: DbOrTx,
  organizationUid: string,
  userUid: string,
): Promise<Role | undefined> {
  const [row] = await db
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)));
  return row?.role;
}
