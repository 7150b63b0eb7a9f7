import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { agentRuns, agents } from './agents.tables.ts';

export type RunRow = typeof agentRuns.$inferSelect;

export async function insertRun(db: DbOrTx, values: typeof agentRuns.$inferInsert): Promise<RunRow> {
  const [row] = await db.insert(agentRuns).values(values).returning();
  await db
    .update(agents)
    .set({ runsCount: sql`${agents.runsCount} + 1` })
    .where(and(eq(agents.organizationUid, values.organizationUid), eq(agents.uid, values.agentUid)));
  return row!;
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
