import { and, count, desc, eq, gte, sql, type SQL } from 'drizzle-orm';
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

export async function recordDelivery(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Pick<typeof agentNotifications.$inferInsert, 'deliveryStatus' | 'deliveryError' | 'externalId'>,
): Promise<NotificationRow | undefined> {
  const [row] = await db
    .update(agentNotifications)
    .set({ ...values, deliveredAt: values.deliveryStatus === 'sent' ? sql`now()` : null })
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
