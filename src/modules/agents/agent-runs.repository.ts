import {
  and,
  asc,
  count,
  desc,
  eq,
  gte,
  inArray,
  isNotNull,
  isNull,
  lte,
  notInArray,
  sql,
  type SQL,
} from 'drizzle-orm';
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

/**
 * Runs a worker started and never finished (the process died): older than the cutoff, still running.
 * Runs an outside runtime claimed are not the workers': their lease says whether they are alive.
 */
export async function failAbandonedRuns(db: DbOrTx, startedBefore: Date): Promise<RunRow[]> {
  const rows = await db
    .update(agentRuns)
    .set({
      status: 'failed',
      error: 'The worker executing this run stopped before it finished',
      completedOn: sql`now()`,
      updatedOn: sql`now()`,
    })
    .where(
      and(
        eq(agentRuns.status, 'running'),
        lte(agentRuns.startedOn, startedBefore),
        isNull(agentRuns.claimTokenHash),
      ),
    )
    .returning();
  return rows;
}

// ---- claims of outside runtimes (docs/agents.md#runs-of-outside-runtimes) ----

const leaseEnd = (seconds: number) => sql`now() + make_interval(secs => ${seconds})`;

/**
 * pending → running under a new claim, or nothing (undefined) when the run is no longer pending: of two
 * claims at once exactly one moves it. The database's clock sets the lease, as it judges it.
 */
export async function claimRun(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  claim: { tokenHash: string; claimedBy: string; leaseSeconds: number },
): Promise<RunRow | undefined> {
  const [row] = await db
    .update(agentRuns)
    .set({
      status: 'running',
      claimTokenHash: claim.tokenHash,
      claimedBy: claim.claimedBy,
      claimedAt: sql`now()`,
      leaseSeconds: claim.leaseSeconds,
      leaseExpiresAt: leaseEnd(claim.leaseSeconds),
      startedOn: sql`now()`,
      updatedOn: sql`now()`,
    })
    .where(
      and(
        eq(agentRuns.organizationUid, organizationUid),
        eq(agentRuns.uid, uid),
        eq(agentRuns.status, 'pending'),
      ),
    )
    .returning();
  return row;
}

/** A new lease for the claim holding this run (running, same token), or undefined. */
export async function renewLease(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  tokenHash: string,
  leaseSeconds: number,
): Promise<RunRow | undefined> {
  const [row] = await db
    .update(agentRuns)
    .set({ leaseSeconds, leaseExpiresAt: leaseEnd(leaseSeconds), updatedOn: sql`now()` })
    .where(
      and(
        eq(agentRuns.organizationUid, organizationUid),
        eq(agentRuns.uid, uid),
        eq(agentRuns.status, 'running'),
        eq(agentRuns.claimTokenHash, tokenHash),
      ),
    )
    .returning();
  return row;
}

/**
 * running → `to` for the claim holding the run (same token), or undefined when it is not running under
 * that claim any more (cancelled, lapsed, finished): the cancel route and the lease sweep race on this.
 */
export async function finishClaimedRun(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  tokenHash: string,
  to: 'completed' | 'failed' | 'stopped',
  values: Partial<typeof agentRuns.$inferInsert>,
): Promise<RunRow | undefined> {
  const [row] = await db
    .update(agentRuns)
    .set({ ...values, status: to, leaseExpiresAt: null, completedOn: sql`now()`, updatedOn: sql`now()` })
    .where(
      and(
        eq(agentRuns.organizationUid, organizationUid),
        eq(agentRuns.uid, uid),
        eq(agentRuns.status, 'running'),
        eq(agentRuns.claimTokenHash, tokenHash),
      ),
    )
    .returning();
  return row;
}

/**
 * Claims whose lease ended at or before `now` (the database's clock when not given), of every
 * organization: those that lapsed `maxLapses` times are failed, the others go back to `pending` with no
 * claim (claimable again, their lapse counted). Each row moves once, whatever runs beside it.
 */
export async function releaseLapsedClaims(
  db: DbOrTx,
  now: Date | undefined,
  maxLapses: number,
): Promise<{ failed: RunRow[]; released: RunRow[] }> {
  const lapsed = and(
    eq(agentRuns.status, 'running'),
    isNotNull(agentRuns.leaseExpiresAt),
    lte(agentRuns.leaseExpiresAt, now ?? sql`now()`),
  );
  const failed = await db
    .update(agentRuns)
    .set({
      status: 'failed',
      error: `The outside runtime's lease lapsed ${maxLapses} times without the run finishing`,
      leaseLapses: sql`${agentRuns.leaseLapses} + 1`,
      leaseExpiresAt: null,
      completedOn: sql`now()`,
      updatedOn: sql`now()`,
    })
    .where(and(lapsed, gte(agentRuns.leaseLapses, maxLapses - 1)))
    .returning();
  const released = await db
    .update(agentRuns)
    .set({
      status: 'pending',
      claimTokenHash: null,
      claimedBy: null,
      claimedAt: null,
      leaseSeconds: null,
      leaseExpiresAt: null,
      startedOn: null,
      leaseLapses: sql`${agentRuns.leaseLapses} + 1`,
      updatedOn: sql`now()`,
    })
    .where(lapsed)
    .returning();
  return { failed, released };
}

/**
 * Runs still `pending` since before `createdBefore` whose agent's type has no built-in executor (no
 * runtime claimed them), of every organization: stopped.
 */
export async function stopUnclaimedRuns(
  db: DbOrTx,
  builtInTypes: readonly string[],
  createdBefore: Date,
  summary: string,
): Promise<RunRow[]> {
  const outsideAgents = db
    .select({ uid: agents.uid })
    .from(agents)
    .where(builtInTypes.length ? notInArray(agents.agentType, [...builtInTypes]) : undefined);
  return db
    .update(agentRuns)
    .set({ status: 'stopped', completedOn: sql`now()`, outcome: { summary }, updatedOn: sql`now()` })
    .where(
      and(
        eq(agentRuns.status, 'pending'),
        lte(agentRuns.createdOn, createdBefore),
        inArray(agentRuns.agentUid, outsideAgents),
      ),
    )
    .returning();
}

export interface RunFilters {
  statuses?: RunStatus[] | undefined;
  agentUid?: string | undefined;
  agentType?: string | undefined;
  taskUid?: string | undefined;
}

/** The organization's runs, by status, agent, agent type or approval; by `created_on`. */
export async function listRuns(
  db: DbOrTx,
  organizationUid: string,
  filters: RunFilters,
  descending: boolean,
  limit: number,
  offset: number,
): Promise<{ rows: RunRow[]; total: number }> {
  const where = and(
    eq(agentRuns.organizationUid, organizationUid),
    filters.statuses?.length ? inArray(agentRuns.status, filters.statuses) : undefined,
    filters.agentUid !== undefined ? eq(agentRuns.agentUid, filters.agentUid) : undefined,
    filters.taskUid !== undefined ? eq(agentRuns.taskUid, filters.taskUid) : undefined,
    filters.agentType !== undefined
      ? inArray(
          agentRuns.agentUid,
          db
            .select({ uid: agents.uid })
            .from(agents)
            .where(and(eq(agents.organizationUid, organizationUid), eq(agents.agentType, filters.agentType))),
        )
      : undefined,
  );
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(agentRuns)
      .where(where)
      .orderBy(
        descending ? desc(agentRuns.createdOn) : asc(agentRuns.createdOn),
        descending ? desc(agentRuns.uid) : asc(agentRuns.uid),
      )
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(agentRuns).where(where),
  ]);
  return { rows, total: totals?.total ?? 0 };
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
