import { and, desc, eq, gt, inArray, isNotNull, isNull, lt, ne, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { preparedQuery, type Database } from '../../platform/db/client.ts';
import { withConnectionAsIs } from '../../platform/db/session-role.ts';
import { users } from '../tenancy/tenancy.tables.ts';
import { signInThrottle, userCredentials, userSessions, userTokens } from './sign-in.tables.ts';

// Every table here is a user's, not an organization's: the service calls these as the service
// (`asService`), always naming the user (or the token's hash, which names one).

export type SessionRow = typeof userSessions.$inferSelect;

export interface SessionAuthRow {
  session_uid: string;
  token_hash: string;
  is_expired: boolean;
  is_revoked: boolean;
  last_seen_at: Date;
  user_uid: string;
  user_id: number;
  email: string;
  full_name: string;
  avatar_url: string | null;
  auth_version: number;
  memberships:
    | {
        organization_uid: string;
        organization_name: string;
        role: string;
        is_default: boolean;
        require_admin_mfa: boolean;
      }[]
    | null;
  totp_enabled: boolean;
  /** Whether the session itself was established with a second factor. */
  second_factor: boolean;
}

/** One statement, as for a key (remit_authenticate_session, migration 0013). */
export async function findSessionForAuthentication(
  database: Database,
  tokenHash: string,
  knownVersion: number,
  idleSeconds: number,
): Promise<SessionAuthRow | undefined> {
  const rows = await withConnectionAsIs(() =>
    preparedQuery<SessionAuthRow>(
      database,
      'remit_authenticate_session_v2',
      'select * from remit_authenticate_session($1, $2, $3)',
      [tokenHash, knownVersion, idleSeconds],
    ),
  );
  return rows[0];
}

export async function insertSession(db: DbOrTx, values: typeof userSessions.$inferInsert) {
  const [row] = await db.insert(userSessions).values(values).returning();
  return row!;
}

/** Moves `last_seen_at` (the idle clock) at most once a minute per session. */
export async function touchSessions(db: DbOrTx, uids: string[]) {
  if (uids.length === 0) return;
  await db
    .update(userSessions)
    .set({ lastSeenAt: sql`now()` })
    .where(
      and(
        inArray(userSessions.uid, uids),
        isNull(userSessions.revokedAt),
        lt(userSessions.lastSeenAt, sql`now() - interval '1 minute'`),
      ),
    );
}

/** The user's sessions still usable (not revoked, within both expiries), newest first. */
export async function listActiveSessions(db: DbOrTx, userUid: string, idleSeconds: number) {
  return db
    .select()
    .from(userSessions)
    .where(
      and(
        eq(userSessions.userUid, userUid),
        isNull(userSessions.revokedAt),
        gt(userSessions.expiresAt, sql`now()`),
        gt(userSessions.lastSeenAt, sql`now() - make_interval(secs => ${idleSeconds})`),
      ),
    )
    .orderBy(desc(userSessions.createdAt), desc(userSessions.uid))
    .limit(200);
}

export async function findSession(db: DbOrTx, userUid: string, uid: string) {
  const [row] = await db
    .select()
    .from(userSessions)
    .where(and(eq(userSessions.userUid, userUid), eq(userSessions.uid, uid)));
  return row;
}

export async function revokeSession(db: DbOrTx, userUid: string, uid: string) {
  const [row] = await db
    .update(userSessions)
    .set({ revokedAt: sql`coalesce(${userSessions.revokedAt}, now())` })
    .where(and(eq(userSessions.userUid, userUid), eq(userSessions.uid, uid)))
    .returning();
  return row;
}

/** Revokes every session of the user (but `exceptUid`); returns how many were still open. */
export async function revokeUserSessions(db: DbOrTx, userUid: string, exceptUid?: string): Promise<number> {
  const rows = await db
    .update(userSessions)
    .set({ revokedAt: sql`now()` })
    .where(
      and(
        eq(userSessions.userUid, userUid),
        isNull(userSessions.revokedAt),
        exceptUid ? ne(userSessions.uid, exceptUid) : undefined,
      ),
    )
    .returning({ uid: userSessions.uid });
  return rows.length;
}

export interface SignInUser {
  uid: string;
  email: string;
  fullName: string;
  passwordHash: string | null;
  totpSecret: string | null;
  totpEnabledAt: Date | null;
  totpLastStep: number | null;
}

/** A user and their sign-in credentials, by email or by uid. */
export async function findSignInUser(
  db: DbOrTx,
  by: { email: string } | { uid: string },
): Promise<SignInUser | undefined> {
  const [row] = await db
    .select({
      uid: users.uid,
      email: users.email,
      fullName: users.fullName,
      passwordHash: userCredentials.passwordHash,
      totpSecret: userCredentials.totpSecret,
      totpEnabledAt: userCredentials.totpEnabledAt,
      totpLastStep: userCredentials.totpLastStep,
    })
    .from(users)
    .leftJoin(userCredentials, eq(userCredentials.userUid, users.uid))
    .where('email' in by ? eq(users.email, by.email) : eq(users.uid, by.uid));
  return row;
}

/** Writes the user's credentials row (created on first use) with `changes`. */
export async function updateCredentials(
  db: DbOrTx,
  userUid: string,
  changes: Partial<Omit<typeof userCredentials.$inferInsert, 'userUid'>>,
) {
  await db
    .insert(userCredentials)
    .values({ userUid, ...changes })
    .onConflictDoUpdate({ target: userCredentials.userUid, set: { ...changes, updatedAt: sql`now()` } });
}

/**
 * Accepts a TOTP time step for the user only if it is later than the last one accepted (a code is good
 * once, even within its window): true when this call took it.
 */
export async function claimTotpStep(db: DbOrTx, userUid: string, step: number): Promise<boolean> {
  const rows = await db
    .update(userCredentials)
    .set({ totpLastStep: step })
    .where(
      and(
        eq(userCredentials.userUid, userUid),
        sql`(${userCredentials.totpLastStep} is null or ${userCredentials.totpLastStep} < ${step})`,
      ),
    )
    .returning({ userUid: userCredentials.userUid });
  return rows.length > 0;
}

export async function insertToken(db: DbOrTx, values: typeof userTokens.$inferInsert) {
  await db.insert(userTokens).values(values);
}

/** The session now counts as established with a second factor (its person just proved one in it). */
export async function markSecondFactor(db: DbOrTx, userUid: string, sessionUid: string) {
  await db
    .update(userSessions)
    .set({ secondFactorAt: sql`now()` })
    .where(and(eq(userSessions.userUid, userUid), eq(userSessions.uid, sessionUid)));
}

/**
 * Every unused token of that kind for the user stops working (a new link replaces the old). Removed,
 * not marked used: a replaced link then answers `invalid_token` ("not valid; ask for a new one"), never
 * "already used" to a person who never used it.
 */
export async function dropUnusedTokens(db: DbOrTx, userUid: string, kind: 'password_reset' | 'sign_in_link') {
  await db
    .delete(userTokens)
    .where(and(eq(userTokens.userUid, userUid), eq(userTokens.kind, kind), isNull(userTokens.usedAt)));
}

/**
 * Uses a one-time token: marks it used and returns its user, in one statement, only when it is of
 * that kind, unused and unexpired (two concurrent uses: one wins). `state` says why one was refused.
 */
export async function consumeToken(
  db: DbOrTx,
  kind: 'password_reset' | 'sign_in_link',
  tokenHash: string,
): Promise<{ userUid: string } | { refused: 'unknown' | 'used' | 'expired' }> {
  const [used] = await db
    .update(userTokens)
    .set({ usedAt: sql`now()` })
    .where(
      and(
        eq(userTokens.tokenHash, tokenHash),
        eq(userTokens.kind, kind),
        isNull(userTokens.usedAt),
        gt(userTokens.expiresAt, sql`now()`),
      ),
    )
    .returning({ userUid: userTokens.userUid });
  if (used) return { userUid: used.userUid };
  const [row] = await db
    .select({ usedAt: userTokens.usedAt })
    .from(userTokens)
    .where(and(eq(userTokens.tokenHash, tokenHash), eq(userTokens.kind, kind)));
  return { refused: !row ? 'unknown' : row.usedAt ? 'used' : 'expired' };
}

export type ThrottleRow = typeof signInThrottle.$inferSelect;

export async function readThrottle(db: DbOrTx, buckets: string[]): Promise<ThrottleRow[]> {
  return db.select().from(signInThrottle).where(inArray(signInThrottle.bucket, buckets));
}

export async function writeThrottle(db: DbOrTx, row: ThrottleRow) {
  await db
    .insert(signInThrottle)
    .values(row)
    .onConflictDoUpdate({
      target: signInThrottle.bucket,
      set: { failures: row.failures, lastFailedAt: row.lastFailedAt, blockedUntil: row.blockedUntil },
    });
}

export async function clearThrottle(db: DbOrTx, bucket: string) {
  await db.delete(signInThrottle).where(eq(signInThrottle.bucket, bucket));
}

/** Drops throttle rows nobody has failed on for a day (a maintenance job). */
export async function purgeThrottle(db: DbOrTx) {
  await db.delete(signInThrottle).where(lt(signInThrottle.lastFailedAt, sql`now() - interval '1 day'`));
}

export async function listTotpSecrets(db: DbOrTx): Promise<{ userUid: string; totpSecret: string }[]> {
  const rows = await db
    .select({ userUid: userCredentials.userUid, totpSecret: userCredentials.totpSecret })
    .from(userCredentials)
    .where(isNotNull(userCredentials.totpSecret));
  return rows.map((r) => ({ userUid: r.userUid, totpSecret: r.totpSecret! }));
}

/** Compare-and-set, so a concurrent change of the secret is never overwritten with the old one. */
export async function replaceTotpSecret(db: DbOrTx, userUid: string, old: string, sealed: string) {
  const rows = await db
    .update(userCredentials)
    .set({ totpSecret: sealed })
    .where(and(eq(userCredentials.userUid, userUid), eq(userCredentials.totpSecret, old)))
    .returning({ userUid: userCredentials.userUid });
  return rows.length > 0;
}
