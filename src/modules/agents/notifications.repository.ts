import { and, count, desc, eq, gte, isNotNull, sql, type SQL } from 'drizzle-orm';
import { rawQuery, type DbOrTx } from '../../platform/db/client.ts';
import { agentNotifications, type NotificationEvent } from './agents.tables.ts';

export type NotificationRow = typeof agentNotifications.$inferSelect;

export async function insertNotification(
  db: DbOrTx,
  values: typeof agentNotifications.$inferInsert,
): Promise<NotificationRow> {
  const [row] = await db.insert(agentNotifications).values(values).returning();
  return row!;
}

export async function findNotification(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<NotificationRow | undefined> {
  const query = db
    .select()
    .from(agentNotifications)
    .where(and(eq(agentNotifications.organizationUid, organizationUid), eq(agentNotifications.uid, uid)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** Marks a post under way: one more attempt, started now (by the database's clock when none is given). */
export async function startAttempt(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  at: Date,
): Promise<NotificationRow | undefined> {
  const [row] = await db
    .update(agentNotifications)
    .set({ attempts: sql`${agentNotifications.attempts} + 1`, attemptStartedAt: at })
    .where(and(eq(agentNotifications.organizationUid, organizationUid), eq(agentNotifications.uid, uid)))
    .returning();
  return row;
}

/** A post that will be tried again at `at` (still `pending`, with the last error). */
export async function scheduleRetry(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: { deliveryError: string; nextAttemptAt: Date },
): Promise<NotificationRow | undefined> {
  const [row] = await db
    .update(agentNotifications)
    .set({ ...values, attemptStartedAt: null })
    .where(and(eq(agentNotifications.organizationUid, organizationUid), eq(agentNotifications.uid, uid)))
    .returning();
  return row;
}

/**
 * Pending posts nobody is working on: due before `dueBefore` (never scheduled, or their retry time
 * long past) and with no attempt under way since `quietSince`. Across organizations: the sweep is the
 * service's own work, and each row names its organization.
 */
export async function listStrandedPending(
  db: DbOrTx,
  dueBefore: Date,
  quietSince: Date,
  limit: number,
): Promise<Pick<NotificationRow, 'uid' | 'organizationUid'>[]> {
  return rawQuery(
    db,
    `select uid, organization_uid as "organizationUid" from agent_notifications
      where delivery_status = 'pending'
        and coalesce(next_attempt_at, created_at) < $1
        and (attempt_started_at is null or attempt_started_at < $2)
      order by coalesce(next_attempt_at, created_at)
      limit $3`,
    [dueBefore.toISOString(), quietSince.toISOString(), limit],
  );
}

/** Marks stranded posts as picked up by the sweep, so the next sweep does not enqueue them again. */
export async function markSwept(db: DbOrTx, organizationUid: string, uid: string, at: Date): Promise<void> {
  await db
    .update(agentNotifications)
    .set({ nextAttemptAt: at })
    .where(and(eq(agentNotifications.organizationUid, organizationUid), eq(agentNotifications.uid, uid)));
}

/** The posted approval messages about a task (to update in place once it changes). */
export async function listPostedAbout(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
): Promise<NotificationRow[]> {
  return db
    .select()
    .from(agentNotifications)
    .where(
      and(
        eq(agentNotifications.organizationUid, organizationUid),
        eq(agentNotifications.taskUid, taskUid),
        eq(agentNotifications.event, 'approval_required'),
        eq(agentNotifications.deliveryStatus, 'sent'),
        isNotNull(agentNotifications.externalId),
      ),
    )
    .orderBy(agentNotifications.createdAt);
}

export async function recordDelivery(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Pick<typeof agentNotifications.$inferInsert, 'deliveryStatus' | 'deliveryError' | 'externalId'>,
): Promise<NotificationRow | undefined> {
  const [row] = await db
    .update(agentNotifications)
    .set({
      ...values,
      deliveredAt: values.deliveryStatus === 'sent' ? sql`now()` : null,
      attemptStartedAt: null,
      nextAttemptAt: null,
    })
    .where(and(eq(agentNotifications.organizationUid, organizationUid), eq(agentNotifications.uid, uid)))
    .returning();
  return row;
}

export async function listNotifications(
  db: DbOrTx,
  organizationUid: string,
  agentUid: string,
  filters: {
    event?: NotificationEvent | undefined;
    runUid?: string | undefined;
    limit: number;
    offset: number;
  },
): Promise<{ rows: NotificationRow[]; total: number }> {
  const where: SQL[] = [
    eq(agentNotifications.organizationUid, organizationUid),
    eq(agentNotifications.agentUid, agentUid),
  ];
  if (filters.event) where.push(eq(agentNotifications.event, filters.event));
  // Index-backed by agent_notifications_run_idx (migration 0018): a run's few among an agent's many.
  if (filters.runUid) where.push(eq(agentNotifications.runUid, filters.runUid));
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(agentNotifications)
      .where(and(...where))
      .orderBy(desc(agentNotifications.createdAt), desc(agentNotifications.uid))
      .limit(filters.limit)
      .offset(filters.offset),
    db
      .select({ total: count() })
      .from(agentNotifications)
      .where(and(...where)),
  ]);
  return { rows, total: totals?.total ?? 0 };
}

export async function hasNotificationSince(
  db: DbOrTx,
  organizationUid: string,
  agentUid: string,
  event: NotificationEvent,
  since: Date,
): Promise<boolean> {
  const [row] = await db
    .select({ uid: agentNotifications.uid })
    .from(agentNotifications)
    .where(
      and(
        eq(agentNotifications.organizationUid, organizationUid),
        eq(agentNotifications.agentUid, agentUid),
        eq(agentNotifications.event, event),
        gte(agentNotifications.createdAt, since),
      ),
    )
    .limit(1);
  return row !== undefined;
}

export interface DigestCounts {
  runs: number;
  completed: number;
  failed: number;
  approvals_raised: number;
  approvals_resolved: number;
}

/** What an agent did since a time: the daily digest's figures. */
export async function digestCounts(
  db: DbOrTx,
  organizationUid: string,
  agentUid: string,
  since: Date,
): Promise<DigestCounts> {
  const [counts] = await rawQuery<DigestCounts>(
    db,
    `select
       (select count(*)::int from agent_runs r where r.organization_uid = $1 and r.agent_uid = $2 and r.created_on >= $3) as runs,
       (select count(*)::int from agent_runs r where r.organization_uid = $1 and r.agent_uid = $2 and r.completed_on >= $3 and r.status = 'completed') as completed,
       (select count(*)::int from agent_runs r where r.organization_uid = $1 and r.agent_uid = $2 and r.completed_on >= $3 and r.status = 'failed') as failed,
       (select count(*)::int from work_tasks t where t.organization_uid = $1 and t.origin_agent_uid = $2 and t.type = 'hil_approval' and t.created_at >= $3) as approvals_raised,
       (select count(*)::int from work_tasks t where t.organization_uid = $1 and t.origin_agent_uid = $2 and t.type = 'hil_approval' and t.resolved_at >= $3) as approvals_resolved`,
    [organizationUid, agentUid, since.toISOString()],
  );
  return counts!;
}
