import type { Db } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { requestRun } from './agent-runs.service.ts';
import { findAgent, listActiveScheduledAgents } from './agents.repository.ts';
import { findScheduledRun } from './agent-runs.repository.ts';
import { firesAt } from './cron.ts';

export const AGENT_SCHEDULE_QUEUE = 'remit.agent.schedule';

/**
 * Every minute: a run for each active agent whose `schedule` trigger fires now. The minute is part of
 * the trigger, and a run for (agent, minute) is written at most once under the agent's lock, so two
 * schedulers (two worker processes) start one run.
 */
export async function runDueSchedules(db: Db, jobs: Jobs, now: Date = new Date()): Promise<number> {
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  const scheduled = await listActiveScheduledAgents(db);
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
      if (await findScheduledRun(tx, agent.organizationUid, agent.uid, scheduledFor)) return false;
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
