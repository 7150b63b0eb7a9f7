import { and, asc, count, desc, eq, gte, inArray, isNotNull, isNull, lte, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { agentRuns, agents, type RunStatus } from './agents.tables.ts';

export type RunRow = typeof agentRuns.$inferSelect;

export async function insertRun(db: DbOrTx, values: typeof agentRuns.$inferInsert): Promise<RunRow> {
  const [row] = await db.insert(agentRuns).values(values).returning();
  await db
    .update(agents)
    .set({ runsCount: sql`${agents.runsCount} + 1` })
    .where(and(eq(agents.organizationUid, values.organizationUid), eq(agents.uid, values.agentUid)));
  return row!;
}

export async function findRun(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
): Promise<RunRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(agentRuns)
    .where(and(inArray(agentRuns.organizationUid, organizationUids), eq(agentRuns.uid, uid)));
  return row;
}

export async function updateRun(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof agentRuns.$inferInsert>,
): Promise<RunRow | undefined> {
  const [row] = await db
    .update(agentRuns)
    .set({ ...values, updatedOn: sql`now()` })
    .where(and(eq(agentRuns.organizationUid, organizationUid), eq(agentRuns.uid, uid)))
    .returning();
  return row;
}

/**
 * Moves a run from one of `from` to `to`, or does nothing (returns undefined) when it is no longer in
 * one of them: the executor and the cancel route race on this, and exactly one of them wins.
 */
export async function moveRun(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  from: RunStatus[],
  to: RunStatus,
  values: Partial<typeof agentRuns.$inferInsert> = {},
): Promise<RunRow | undefined> {
  const [row] = await db
    .update(agentRuns)
    .set({ ...values, status: to, updatedOn: sql`now()` })
    .where(
      and(
        eq(agentRuns.organizationUid, organizationUid),
        eq(agentRuns.uid, uid),
        inArray(agentRuns.status, from),
      ),
    )
    .returning();
  return row;
}

export interface ActivityFilters {
  statuses?: RunStatus[] | undefined;
  startedFrom?: Date | undefined;
  startedTo?: Date | undefined;
  completedFrom?: Date | undefined;
  completedTo?: Date | undefined;
  createdFrom?: Date | undefined;
  createdTo?: Date | undefined;
  hasStarted?: boolean | undefined;
  hasCompleted?: boolean | undefined;
}

const SORT_COLUMNS = {
  started_on: agentRuns.startedOn,
  completed_on: agentRuns.completedOn,
  created_on: agentRuns.createdOn,
  status: agentRuns.status,
} as const;
export type RunSortField = keyof typeof SORT_COLUMNS;

function activityWhere(organizationUid: string, agentUid: string, f: ActivityFilters): SQL[] {
  const where: SQL[] = [eq(agentRuns.organizationUid, organizationUid), eq(agentRuns.agentUid, agentUid)];
  if (f.statuses?.length) where.push(inArray(agentRuns.status, f.statuses));
  if (f.startedFrom) where.push(gte(agentRuns.startedOn, f.startedFrom));
  if (f.startedTo) where.push(lte(agentRuns.startedOn, f.startedTo));
  if (f.completedFrom) where.push(gte(agentRuns.completedOn, f.completedFrom));
  if (f.completedTo) where.push(lte(agentRuns.completedOn, f.completedTo));
  if (f.createdFrom) where.push(gte(agentRuns.createdOn, f.createdFrom));
  if (f.createdTo) where.push(lte(agentRuns.createdOn, f.createdTo));
  if (f.hasStarted !== undefined)
    where.push(f.hasStarted ? isNotNull(agentRuns.startedOn) : isNull(agentRuns.startedOn));
  if (f.hasCompleted !== undefined)
    where.push(f.hasCompleted ? isNotNull(agentRuns.completedOn) : isNull(agentRuns.completedOn));
  return where;
}

export async function listActivities(
  db: DbOrTx,
  organizationUid: string,
  agentUid: string,
  filters: ActivityFilters,
  order: { field: RunSortField; descending: boolean; groupByTrigger: boolean },
  limit: number,
  offset: number,
): Promise<{ rows: RunRow[]; total: number; groups: { trigger_type: string; count: number }[] | null }> {
  const where = and(...activityWhere(organizationUid, agentUid, filters));
  const column = SORT_COLUMNS[order.field];
  const orderBy = [
    ...(order.groupByTrigger ? [asc(agentRuns.triggerType)] : []),
    order.descending ? sql`${column} desc nulls last` : sql`${column} asc nulls last`,
    order.descending ? desc(agentRuns.createdOn) : asc(agentRuns.createdOn),
    asc(agentRuns.uid),
  ];
  const [rows, [totals], groups] = await Promise.all([
    db
      .select()
      .from(agentRuns)
      .where(where)
      .orderBy(...orderBy)
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(agentRuns).where(where),
    order.groupByTrigger
      ? db
          .select({ trigger_type: agentRuns.triggerType, count: count() })
          .from(agentRuns)
          .where(where)
          .groupBy(agentRuns.triggerType)
          .orderBy(asc(agentRuns.triggerType))
      : Promise.resolve(null),
  ]);
  return { rows, total: totals?.total ?? 0, groups };
}

/** Runs a worker started and never finished (the process died): older than the cutoff, still running. */
export async function failAbandonedRuns(db: DbOrTx, startedBefore: Date): Promise<RunRow[]> {
  const rows = await db
    .update(agentRuns)
    .set({
      status: 'failed',
      error: 'The worker executing this run stopped before it finished',
      completedOn: sql`now()`,
      updatedOn: sql`now()`,
    })
    .where(and(eq(agentRuns.status, 'running'), lte(agentRuns.startedOn, startedBefore)))
    .returning();
  return rows;
}

/** The run a schedule already started for this agent and minute, if any. */
export async function findScheduledRun(
  db: DbOrTx,
  organizationUid: string,
  agentUid: string,
  scheduledFor: string,
): Promise<{ uid: string } | undefined> {
  const [existing] = await db
    .select({ uid: agentRuns.uid })
    .from(agentRuns)
    .where(
      and(
        eq(agentRuns.organizationUid, organizationUid),
        eq(agentRuns.agentUid, agentUid),
        eq(agentRuns.triggerType, 'schedule'),
        sql`${agentRuns.trigger} ->> 'scheduled_for' = ${scheduledFor}`,
      ),
    )
    .limit(1);
  return existing;
}
