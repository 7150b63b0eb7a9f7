import { and, count, desc, eq, inArray, max, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { agents, agentVersions, type AgentStatus } from './agents.tables.ts';

export type AgentRow = typeof agents.$inferSelect;

export async function insertAgent(db: DbOrTx, values: typeof agents.$inferInsert): Promise<AgentRow> {
  const [row] = await db.insert(agents).values(values).returning();
  return row!;
}

/** An agent of any of the given organizations (a lookup by uid across the caller's memberships). */
export async function findAgent(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<AgentRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const query = db
    .select()
    .from(agents)
    .where(and(inArray(agents.organizationUid, organizationUids), eq(agents.uid, uid)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function updateAgent(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof agents.$inferInsert>,
): Promise<AgentRow> {
  const [row] = await db
    .update(agents)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(agents.organizationUid, organizationUid), eq(agents.uid, uid)))
    .returning();
  return row!;
}

/** Writes the next version of the agent's instructions and tools; returns its uid. */
export async function insertNextVersion(
  db: DbOrTx,
  agent: Pick<AgentRow, 'organizationUid' | 'uid' | 'instructions' | 'tools'>,
): Promise<string> {
  const [latest] = await db
    .select({ version: max(agentVersions.version) })
    .from(agentVersions)
    .where(
      and(eq(agentVersions.organizationUid, agent.organizationUid), eq(agentVersions.agentUid, agent.uid)),
    );
  const [row] = await db
    .insert(agentVersions)
    .values({
      organizationUid: agent.organizationUid,
      agentUid: agent.uid,
      version: (latest?.version ?? 0) + 1,
      instructions: agent.instructions,
      tools: agent.tools,
    })
    .returning({ uid: agentVersions.uid });
  return row!.uid;
}

export async function listAgentVersions(db: DbOrTx, organizationUid: string, agentUid: string) {
  return db
    .select()
    .from(agentVersions)
    .where(and(eq(agentVersions.organizationUid, organizationUid), eq(agentVersions.agentUid, agentUid)))
    .orderBy(agentVersions.version);
}

export async function listAgents(
  db: DbOrTx,
  organizationUid: string,
  filters: {
    status?: AgentStatus | undefined;
    agentType?: string | undefined;
    limit: number;
    offset: number;
  },
): Promise<{ rows: AgentRow[]; total: number }> {
  const where: SQL[] = [eq(agents.organizationUid, organizationUid)];
  if (filters.status) where.push(eq(agents.status, filters.status));
  if (filters.agentType) where.push(eq(agents.agentType, filters.agentType));
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(agents)
      .where(and(...where))
      .orderBy(desc(agents.createdAt), desc(agents.uid))
      .limit(filters.limit)
      .offset(filters.offset),
    db
      .select({ total: count() })
      .from(agents)
      .where(and(...where)),
  ]);
  return { rows, total: totals?.total ?? 0 };
}

/** Active agents of the organization with a trigger of the given type (inbound email, schedules). */
export async function listActiveAgentsWithTrigger(
  db: DbOrTx,
  organizationUid: string,
  triggerType: string,
): Promise<AgentRow[]> {
  return db
    .select()
    .from(agents)
    .where(
      and(
        eq(agents.organizationUid, organizationUid),
        eq(agents.status, 'active'),
        sql`${agents.triggers} @> ${JSON.stringify([{ type: triggerType }])}::jsonb`,
      ),
    )
    .orderBy(agents.createdAt, agents.uid);
}

/** Every organization's active agents with a `schedule` trigger: the scheduler's candidates. */
export async function listActiveScheduledAgents(db: DbOrTx): Promise<AgentRow[]> {
  return db
    .select()
    .from(agents)
    .where(and(eq(agents.status, 'active'), sql`${agents.triggers} @> '[{"type":"schedule"}]'::jsonb`));
}

/** Every organization's agents with the daily digest switched on: the digest job's candidates. */
export async function listAgentsWithDigest(db: DbOrTx): Promise<AgentRow[]> {
  return db
    .select()
    .from(agents)
    .where(sql`(${agents.notificationConfig} -> 'events' ->> 'digest')::boolean is true`);
}
