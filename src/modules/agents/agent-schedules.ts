import cronParser from 'cron-parser';
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { requestRun } from './agent-runs.service.ts';
import { findAgent } from './agents.repository.ts';
import { agentRuns, agents } from './agents.tables.ts';

export const AGENT_SCHEDULE_QUEUE = 'remit.agent.schedule';

/** Whether a five-field cron expression (UTC) is valid. */
export function isValidCron(expression: string): boolean {
  try {
    cronParser.parseExpression(expression, { utc: true });
    return expression.trim().split(/\s+/).length === 5;
  } catch {
    return false;
  }
}

/** Whether the expression fires at this minute (UTC). */
export function firesAt(expression: string, minute: Date): boolean {
  try {
    const interval = cronParser.parseExpression(expression, {
      utc: true,
      currentDate: new Date(minute.getTime() - 1000),
    });
    return interval.next().getTime() === minute.getTime();
  } catch {
    return false;
  }
}

/**
 * Every minute: a run for each active agent whose `schedule` trigger fires now. The minute is part of
 * the trigger, and a run for (agent, minute) is written at most once under the agent's lock, so two
 * schedulers (two worker processes) start one run.
 */
export async function runDueSchedules(db: Db, jobs: Jobs, now: Date = new Date()): Promise<number> {
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  const scheduled = await db
    .select()
    .from(agents)
    .where(and(eq(agents.status, 'active'), sql`${agents.triggers} @> '[{"type":"schedule"}]'::jsonb`));
  let started = 0;
  for (const candidate of scheduled) {
    const due = candidate.triggers.filter(
      (t) => t.type === 'schedule' && typeof t.cron === 'string' && firesAt(t.cron, minute),
    );
    if (due.length === 0) continue;
    const scheduledFor = minute.toISOString();
    const didStart = await db.transaction(async (tx) => {
      const agent = await findAgent(tx, [candidate.organizationUid], candidate.uid, { forUpdate: true });
      if (!agent || agent.status !== 'active') return false;
      const [existing] = await tx
        .select({ uid: agentRuns.uid })
        .from(agentRuns)
        .where(
          and(
            eq(agentRuns.organizationUid, agent.organizationUid),
            eq(agentRuns.agentUid, agent.uid),
            eq(agentRuns.triggerType, 'schedule'),
            sql`${agentRuns.trigger} ->> 'scheduled_for' = ${scheduledFor}`,
          ),
        )
        .limit(1);
      if (existing) return false;
      await requestRun(tx, jobs, {
        agent,
        triggerType: 'schedule',
        trigger: { type: 'schedule', cron: due[0]!.cron, scheduled_for: scheduledFor },
      });
      return true;
    });
    if (didStart) started += 1;
  }
  return started;
}
