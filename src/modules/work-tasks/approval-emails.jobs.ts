import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { APPROVAL_EMAIL_QUEUE, type ApprovalEmailJobData } from './approval-emails.ts';
import { sendApprovalEmails } from './approval-emails.service.ts';

/**
 * `remit.approvals.email`: one job per raised approval that someone wants by email, enqueued in the
 * raise's transaction; it mails each recipient after commit (docs/approval-emails.md#sending).
 */
export async function registerApprovalEmailJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const sending = {
    db: deps.database.db,
    config: deps.config,
    mail: deps.clients.mail,
    secretKeys: deps.secrets.keys,
  };
  await deps.jobs.define<ApprovalEmailJobData>(APPROVAL_EMAIL_QUEUE, async (data, job) => {
    const result = await sendApprovalEmails(sending, data, job.id);
    if (result.sent + result.skipped > 0) log.info({ task_uid: data.task_uid, ...result }, 'approval emails');
  });
}
