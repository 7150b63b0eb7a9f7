import {
  and,
  asc,
  count,
  desc,
  eq,
  ilike,
  inArray,
  isNotNull,
  isNull,
  lte,
  or,
  sql,
  type SQL,
} from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { containsPattern } from '../../platform/db/text-search.ts';
import { agents } from '../agents/agents.tables.ts';
import { invoices } from '../invoices/invoices.tables.ts';
import { parties } from '../parties/parties.tables.ts';
import { memberships, users } from '../tenancy/tenancy.tables.ts';
import {
  workTaskApprovals,
  workTaskChanges,
  workTaskContextEntities,
  workTasks,
  type ContextEntityType,
  type TaskPriority,
  type TaskStatus,
  type TaskType,
} from './work-tasks.tables.ts';

export type TaskRow = typeof workTasks.$inferSelect;
export type ChangeRow = typeof workTaskChanges.$inferSelect;
export interface EntityRef {
  entity_type: ContextEntityType;
  entity_uid: string;
}
export interface HydratedEntity extends EntityRef {
  taskUid: string;
  invoice_number?: string;
  counterparty_name?: string;
  name?: string;
}
export interface NewChange {
  byType: 'user' | 'agent' | 'system';
  byUserUid?: string | null;
  byAgentUid?: string | null;
  byName: string;
  action: string;
  details: Record<string, unknown> | null;
}

/** An instant `minutes` after the transaction's `now()` (the database's clock); null for none. */
const minutesFromNow = (minutes: number | null | undefined) =>
  minutes ? sql`now() + make_interval(mins => ${minutes}::int)` : null;

export async function insertTask(
  db: DbOrTx,
  values: typeof workTasks.$inferInsert,
  /** An approval policy's deadlines, counted from now by the database's clock. */
  deadlines: { expiresAfterMinutes?: number | null; escalateAfterMinutes?: number | null } = {},
): Promise<TaskRow> {
  const [row] = await db
    .insert(workTasks)
    .values({
      ...values,
      expiresAt: minutesFromNow(deadlines.expiresAfterMinutes),
      escalateAt: minutesFromNow(deadlines.escalateAfterMinutes),
    })
    .returning();
  return row!;
}

export async function findTask(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<TaskRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const query = db
    .select()
    .from(workTasks)
    .where(and(inArray(workTasks.organizationUid, organizationUids), eq(workTasks.uid, uid)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** What every write to a task sets besides its own values: one more revision, and now. */
const touched = () => ({ revision: sql`${workTasks.revision} + 1`, updatedAt: sql`now()` });

/**
 * A write of `tool_args` moves `args_revision` only when the arguments differ (jsonb equality: the
 * order of keys does not count), so a decision bound to what a person saw is refused after a change.
 */
const argsTouched = (toolArgs: Record<string, unknown> | null | undefined) =>
  toolArgs === undefined
    ? {}
    : {
        argsRevision: sql`CASE WHEN ${workTasks.toolArgs} IS DISTINCT FROM ${
          toolArgs === null ? sql`NULL` : JSON.stringify(toolArgs)
        }::jsonb THEN ${workTasks.argsRevision} + 1 ELSE ${workTasks.argsRevision} END`,
      };

/** The task, while it is undecided: of concurrent writers that check this, one wins. */
const undecided = (organizationUid: string, uid: string) =>
  and(eq(workTasks.organizationUid, organizationUid), eq(workTasks.uid, uid), isNull(workTasks.resolution));

export async function updateTask(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof workTasks.$inferInsert>,
): Promise<TaskRow> {
  const [row] = await db
    .update(workTasks)
    .set({ ...values, ...argsTouched(values.toolArgs), ...touched() })
    .where(and(eq(workTasks.organizationUid, organizationUid), eq(workTasks.uid, uid)))
    .returning();
  return row!;
}

/**
 * Resolves an approval only while it is unresolved: of concurrent resolutions exactly one updates the
 * row (the others wait on its lock, then find `resolution` set and get nothing back).
 */
export async function resolveTask(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Pick<
    typeof workTasks.$inferInsert,
    'status' | 'resolution' | 'resolvedByUserUid' | 'resolutionNote' | 'toolArgs'
  >,
): Promise<TaskRow | undefined> {
  const [row] = await db
    .update(workTasks)
    .set({
      ...values,
      resolvedAt: sql`now()`,
      ...argsTouched(values.toolArgs),
      ...touched(),
    })
    .where(undecided(organizationUid, uid))
    .returning();
  return row;
}

/**
 * Keeps a person's feedback on an approval still undecided (`action: respond`) as its pending
 * `response`, stamped with the database's clock (ISO, milliseconds, UTC: the stamp also names the
 * response to the revision that answers it). `status`, when given, moves with it. Undefined when the
 * approval was decided meanwhile.
 */
export async function recordResponse(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  response: { feedback: string; userUid: string },
  status: TaskStatus | undefined,
): Promise<TaskRow | undefined> {
  const [row] = await db
    .update(workTasks)
    .set({
      response: sql`jsonb_build_object(
        'feedback', ${response.feedback}::text,
        'user_uid', ${response.userUid}::text,
        'at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      )`,
      ...(status ? { status } : {}),
      ...touched(),
    })
    .where(undecided(organizationUid, uid))
    .returning();
  return row;
}

export async function replaceContextEntities(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  entities: EntityRef[],
): Promise<void> {
  await db
    .delete(workTaskContextEntities)
    .where(
      and(
        eq(workTaskContextEntities.organizationUid, organizationUid),
        eq(workTaskContextEntities.taskUid, taskUid),
      ),
    );
  if (entities.length === 0) return;
  await db.insert(workTaskContextEntities).values(
    entities.map((e, position) => ({
      organizationUid,
      taskUid,
      entityType: e.entity_type,
      entityUid: e.entity_uid,
      position,
    })),
  );
}

export async function insertChanges(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  changes: NewChange[],
): Promise<void> {
  if (changes.length === 0) return;
  await db.insert(workTaskChanges).values(
    changes.map((c, seq) => ({
      organizationUid,
      taskUid,
      byType: c.byType,
      byUserUid: c.byUserUid ?? null,
      byAgentUid: c.byAgentUid ?? null,
      byName: c.byName,
      action: c.action,
      details: c.details,
      // The moment of the write, not of the transaction's start: a change that waited on the task's
      // lock must still sort after the one it waited for.
      at: sql`clock_timestamp()`,
      seq,
    })),
  );
}

/**
 * Unassigns every open task (not done, not canceled) assigned to the user, with one change-log entry
 * each (`change` for every task); returns the tasks' uids.
 */
export async function unassignOpenTasksOf(
  db: DbOrTx,
  organizationUid: string,
  userUid: string,
  change: NewChange,
): Promise<TaskRow[]> {
  const rows = await db
    .update(workTasks)
    .set({
      assigneeType: null,
      assigneeUserUid: null,
      assigneeAgentUid: null,
      ...touched(),
    })
    .where(
      and(
        eq(workTasks.organizationUid, organizationUid),
        eq(workTasks.assigneeUserUid, userUid),
        sql`${workTasks.status} not in ('done', 'canceled')`,
      ),
    )
    .returning();
  if (rows.length > 0) {
    await db.insert(workTaskChanges).values(
      rows.map(({ uid }) => ({
        organizationUid,
        taskUid: uid,
        byType: change.byType,
        byUserUid: change.byUserUid ?? null,
        byAgentUid: change.byAgentUid ?? null,
        byName: change.byName,
        action: change.action,
        details: change.details,
        at: sql`clock_timestamp()`,
        seq: 0,
      })),
    );
  }
  return rows;
}

/** Which of the given entities exist in the organization (`type:uid` keys). */
export async function existingEntityKeys(
  db: DbOrTx,
  organizationUid: string,
  entities: EntityRef[],
  /** The invoice access rule for the caller (a member links only invoices they may see). */
  visibleInvoices?: SQL,
): Promise<Set<string>> {
  const invoiceUids = entities.filter((e) => e.entity_type === 'invoice').map((e) => e.entity_uid);
  const partyUids = entities.filter((e) => e.entity_type === 'party').map((e) => e.entity_uid);
  const found = new Set<string>();
  if (invoiceUids.length > 0) {
    const rows = await db
      .select({ uid: invoices.uid })
      .from(invoices)
      .where(
        and(
          eq(invoices.organizationUid, organizationUid),
          inArray(invoices.uid, invoiceUids),
          visibleInvoices,
        ),
      );
    for (const r of rows) found.add(`invoice:${r.uid}`);
  }
  if (partyUids.length > 0) {
    const rows = await db
      .select({ uid: parties.uid })
      .from(parties)
      .where(and(eq(parties.organizationUid, organizationUid), inArray(parties.uid, partyUids)));
    for (const r of rows) found.add(`party:${r.uid}`);
  }
  return found;
}

/** Context entities of the tasks, with the names a reader needs (interface 2.8), in the given order. */
export async function loadContextEntities(
  db: DbOrTx,
  organizationUid: string,
  taskUids: string[],
): Promise<HydratedEntity[]> {
  if (taskUids.length === 0) return [];
  const rows = await db
    .select({
      taskUid: workTaskContextEntities.taskUid,
      entityType: workTaskContextEntities.entityType,
      entityUid: workTaskContextEntities.entityUid,
      invoiceNumber: invoices.invoiceNumber,
      invoiceType: invoices.invoiceType,
      clientName: invoices.clientName,
      vendorName: invoices.vendorName,
      partyName: parties.name,
    })
    .from(workTaskContextEntities)
    .leftJoin(
      invoices,
      and(
        eq(workTaskContextEntities.entityType, 'invoice'),
        eq(invoices.organizationUid, workTaskContextEntities.organizationUid),
        eq(invoices.uid, workTaskContextEntities.entityUid),
      ),
    )
    .leftJoin(
      parties,
      and(
        eq(workTaskContextEntities.entityType, 'party'),
        eq(parties.organizationUid, workTaskContextEntities.organizationUid),
        eq(parties.uid, workTaskContextEntities.entityUid),
      ),
    )
    .where(
      and(
        eq(workTaskContextEntities.organizationUid, organizationUid),
        inArray(workTaskContextEntities.taskUid, taskUids),
      ),
    )
    .orderBy(workTaskContextEntities.taskUid, workTaskContextEntities.position);
  return rows.map((r) => {
    const base = { taskUid: r.taskUid, entity_type: r.entityType, entity_uid: r.entityUid };
    if (r.entityType === 'invoice')
      return {
        ...base,
        invoice_number: r.invoiceNumber ?? '',
        // The other side of the invoice: the client of a receivable, the vendor of a payable.
        counterparty_name: (r.invoiceType === 'ACCOUNTS_PAYABLE' ? r.vendorName : r.clientName) ?? '',
      };
    return { ...base, name: r.partyName ?? '' };
  });
}

export async function loadChanges(
  db: DbOrTx,
  organizationUid: string,
  taskUids: string[],
): Promise<ChangeRow[]> {
  if (taskUids.length === 0) return [];
  return db
    .select()
    .from(workTaskChanges)
    .where(
      and(eq(workTaskChanges.organizationUid, organizationUid), inArray(workTaskChanges.taskUid, taskUids)),
    )
    .orderBy(workTaskChanges.at, workTaskChanges.seq, workTaskChanges.uid);
}

export async function loadUsers(db: DbOrTx, uids: string[]) {
  if (uids.length === 0) return [];
  return db
    .select({ uid: users.uid, fullName: users.fullName, email: users.email, avatarUrl: users.avatarUrl })
    .from(users)
    .where(inArray(users.uid, uids));
}

export async function loadAgentNames(db: DbOrTx, organizationUid: string, uids: string[]) {
  if (uids.length === 0) return [];
  return db
    .select({ uid: agents.uid, name: agents.name })
    .from(agents)
    .where(and(eq(agents.organizationUid, organizationUid), inArray(agents.uid, uids)));
}

export async function isMember(db: DbOrTx, organizationUid: string, userUid: string): Promise<boolean> {
  const [row] = await db
    .select({ userUid: memberships.userUid })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, userUid)));
  return row !== undefined;
}

export async function agentExists(db: DbOrTx, organizationUid: string, agentUid: string): Promise<boolean> {
  const [row] = await db
    .select({ uid: agents.uid })
    .from(agents)
    .where(and(eq(agents.organizationUid, organizationUid), eq(agents.uid, agentUid)));
  return row !== undefined;
}

export interface TaskFilters {
  statuses?: TaskStatus[] | undefined;
  type?: TaskType | undefined;
  priorities?: TaskPriority[] | undefined;
  assigneeUserUid?: string | undefined;
  assigneeAgentUid?: string | undefined;
  q?: string | undefined;
}

const PRIORITY_RANK = sql`case ${workTasks.priority} when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 else 3 end`;
const STATUS_RANK = sql`case ${workTasks.status} when 'todo' then 0 when 'in_progress' then 1 when 'in_review' then 2 when 'done' then 3 else 4 end`;
const SORT_COLUMNS = {
  created_at: sql`${workTasks.createdAt}`,
  updated_at: sql`${workTasks.updatedAt}`,
  due_date: sql`${workTasks.dueDate}`,
  // Urgency order, not alphabetical: ascending puts urgent first.
  priority: PRIORITY_RANK,
  // Workflow order: todo, in_progress, in_review, done, canceled.
  status: STATUS_RANK,
} as const;
export type TaskSortField = keyof typeof SORT_COLUMNS;

export async function listTasks(
  db: DbOrTx,
  organizationUid: string,
  filters: TaskFilters,
  sort: { field: TaskSortField; descending: boolean },
  limit: number,
  offset: number,
): Promise<{ rows: TaskRow[]; total: number }> {
  const where: SQL[] = [eq(workTasks.organizationUid, organizationUid)];
  if (filters.statuses?.length) where.push(inArray(workTasks.status, filters.statuses));
  if (filters.type) where.push(eq(workTasks.type, filters.type));
  if (filters.priorities?.length) where.push(inArray(workTasks.priority, filters.priorities));
  if (filters.assigneeUserUid) where.push(eq(workTasks.assigneeUserUid, filters.assigneeUserUid));
  if (filters.assigneeAgentUid) where.push(eq(workTasks.assigneeAgentUid, filters.assigneeAgentUid));
  if (filters.q) {
    const pattern = containsPattern(filters.q);
    where.push(or(ilike(workTasks.title, pattern), ilike(workTasks.description, pattern))!);
  }
  const column = SORT_COLUMNS[sort.field];
  const direction = sort.descending ? sql`desc nulls last` : sql`asc nulls last`;
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(workTasks)
      .where(and(...where))
      .orderBy(sql`${column} ${direction}`, sort.descending ? desc(workTasks.uid) : asc(workTasks.uid))
      .limit(limit)
      .offset(offset),
    db
      .select({ total: count() })
      .from(workTasks)
      .where(and(...where)),
  ]);
  return { rows, total: totals?.total ?? 0 };
}

/** Unresolved tasks of a type about one entity (the collections agent's "already asked?" check). */
export async function findOpenTasksAbout(
  db: DbOrTx,
  organizationUid: string,
  entity: EntityRef,
  type: TaskType,
): Promise<TaskRow[]> {
  return db
    .select({ task: workTasks })
    .from(workTaskContextEntities)
    .innerJoin(
      workTasks,
      and(
        eq(workTasks.organizationUid, workTaskContextEntities.organizationUid),
        eq(workTasks.uid, workTaskContextEntities.taskUid),
      ),
    )
    .where(
      and(
        eq(workTaskContextEntities.organizationUid, organizationUid),
        eq(workTaskContextEntities.entityType, entity.entity_type),
        eq(workTaskContextEntities.entityUid, entity.entity_uid),
        eq(workTasks.type, type),
        inArray(workTasks.status, ['todo', 'in_progress', 'in_review']),
      ),
    )
    .then((rows) => rows.map((r) => r.task));
}

// ---- approval policies: votes and deadlines (migration 0022, docs/approvals.md) ----

export interface ApprovalVote {
  taskUid: string;
  userUid: string;
  at: Date;
}

/** Who approved each of these tasks so far, oldest first. */
export async function loadApprovals(
  db: DbOrTx,
  organizationUid: string,
  taskUids: string[],
): Promise<ApprovalVote[]> {
  if (taskUids.length === 0) return [];
  return db
    .select({
      taskUid: workTaskApprovals.taskUid,
      userUid: workTaskApprovals.userUid,
      at: workTaskApprovals.at,
    })
    .from(workTaskApprovals)
    .where(
      and(
        eq(workTaskApprovals.organizationUid, organizationUid),
        inArray(workTaskApprovals.taskUid, taskUids),
      ),
    )
    .orderBy(workTaskApprovals.at, workTaskApprovals.userUid);
}

/** Records a person's approval; false when they had already approved this task. */
export async function insertApproval(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  userUid: string,
): Promise<boolean> {
  const rows = await db
    .insert(workTaskApprovals)
    .values({ organizationUid, taskUid, userUid })
    .onConflictDoNothing()
    .returning({ userUid: workTaskApprovals.userUid });
  return rows.length === 1;
}

/** Forgets the approvals given so far (they approved arguments that were then edited); how many. */
export async function deleteApprovals(db: DbOrTx, organizationUid: string, taskUid: string): Promise<number> {
  const rows = await db
    .delete(workTaskApprovals)
    .where(
      and(eq(workTaskApprovals.organizationUid, organizationUid), eq(workTaskApprovals.taskUid, taskUid)),
    )
    .returning({ userUid: workTaskApprovals.userUid });
  return rows.length;
}

export async function countApprovals(db: DbOrTx, organizationUid: string, taskUid: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(workTaskApprovals)
    .where(
      and(eq(workTaskApprovals.organizationUid, organizationUid), eq(workTaskApprovals.taskUid, taskUid)),
    );
  return Number(row?.n ?? 0);
}

/** Whether the task's deadline has passed by the database's clock (the transaction's `now()`). */
export async function isPastExpiry(db: DbOrTx, organizationUid: string, uid: string): Promise<boolean> {
  const [row] = await db
    .select({ past: sql<boolean>`${workTasks.expiresAt} <= now()` })
    .from(workTasks)
    .where(and(eq(workTasks.organizationUid, organizationUid), eq(workTasks.uid, uid)));
  return row?.past === true;
}

/** Escalated now (by the database's clock), with the policy snapshot that names its added approvers. */
export async function markEscalated(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  policy: NonNullable<TaskRow['policy']>,
): Promise<TaskRow | undefined> {
  const [row] = await db
    .update(workTasks)
    .set({
      policy,
      escalatedAt: sql`now()`,
      ...touched(),
    })
    .where(and(undecided(organizationUid, uid), isNull(workTasks.escalatedAt)))
    .returning();
  return row;
}

export interface DueTask {
  organizationUid: string;
  uid: string;
}

/** Undecided approvals whose deadline is at or before `now`, of every organization, soonest first. */
export async function dueExpiries(db: DbOrTx, now: Date, limit: number): Promise<DueTask[]> {
  return db
    .select({ organizationUid: workTasks.organizationUid, uid: workTasks.uid })
    .from(workTasks)
    .where(and(isNull(workTasks.resolution), isNotNull(workTasks.expiresAt), lte(workTasks.expiresAt, now)))
    .orderBy(workTasks.expiresAt)
    .limit(limit);
}

/** Undecided approvals not escalated yet whose escalation time is at or before `now`, soonest first. */
export async function dueEscalations(db: DbOrTx, now: Date, limit: number): Promise<DueTask[]> {
  return db
    .select({ organizationUid: workTasks.organizationUid, uid: workTasks.uid })
    .from(workTasks)
    .where(
      and(
        isNull(workTasks.resolution),
        isNull(workTasks.escalatedAt),
        isNotNull(workTasks.escalateAt),
        lte(workTasks.escalateAt, now),
      ),
    )
    .orderBy(workTasks.escalateAt)
    .limit(limit);
}
