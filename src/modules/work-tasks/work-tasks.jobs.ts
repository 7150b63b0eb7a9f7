import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import {
  APPROVAL_ESCALATION_QUEUE,
  APPROVAL_EXPIRY_QUEUE,
  escalateDueApprovals,
  ESCALATION_NOTICE_QUEUE,
  expireDueApprovals,
  sendEscalationNotice,
  type EscalationNoticeData,
} from './approval-deadlines.service.ts';

/**
 * The deadlines of approval policies (docs/approvals.md#expiry-and-escalation): expiry and escalation
 * every minute, and one notice job per person or channel an escalation tells.
 */
export async function registerWorkTaskJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  await jobs.define(APPROVAL_EXPIRY_QUEUE, async () => {
    const expired = await expireDueApprovals(database.db, jobs);
    if (expired > 0) log.info({ expired }, 'approvals expired (fail closed)');
  });
  await jobs.schedule(APPROVAL_EXPIRY_QUEUE, '* * * * *');
  await jobs.define(APPROVAL_ESCALATION_QUEUE, async () => {
    const escalated = await escalateDueApprovals(database.db, jobs);
    if (escalated > 0) log.info({ escalated }, 'approvals escalated');
  });
  await jobs.schedule(APPROVAL_ESCALATION_QUEUE, '* * * * *');
  const noticeDeps = {
    db: database.db,
    config: deps.config,
    mail: deps.clients.mail,
    chat: deps.clients.chat,
    jobs,
  };
  await jobs.define<EscalationNoticeData>(ESCALATION_NOTICE_QUEUE, async (data) => {
    const outcome = await sendEscalationNotice(noticeDeps, data);
    log.info({ task_uid: data.task_uid, outcome }, 'approval escalation notice');
  });
}
