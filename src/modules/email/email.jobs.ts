import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { jobOrigin } from '../audit/audit.service.ts';
import {
  accountMailers,
  actorOfJob,
  EMAIL_SEND_QUEUE,
  EMAIL_SWEEP_QUEUE,
  runSendJob,
  sweepEmailDrafts,
  type SendJobData,
} from './email-sending.ts';

/**
 * Scheduled email: one job per draft at its planned_send_at, and a sweep every minute for due drafts
 * without a pending job (docs/email-sending.md).
 */
export async function registerEmailJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  const sending = {
    db: database.db,
    jobs,
    storage: deps.objectStorage,
    mailers: accountMailers(deps.clients.mail, deps.secrets),
    leaseSeconds: deps.config.emailSendLeaseS,
  };
  // A send job still `active` past the lease belongs to a worker that died: the queue fails it and its
  // retry finds out what happened to the attempt (docs/email-sending.md#no-double-send).
  await jobs.define<SendJobData>(
    EMAIL_SEND_QUEUE,
    async (data, job) => {
      const result = await runSendJob(sending, data, jobOrigin(job, actorOfJob(data)));
      if (result === 'sent' || result === 'failed') {
        log.info({ draft_uid: data.draft_uid, result }, 'email send');
      }
    },
    { expireInSeconds: deps.config.emailSendLeaseS },
  );
  await jobs.define(EMAIL_SWEEP_QUEUE, async () => {
    const result = await sweepEmailDrafts({ db: database.db, jobs });
    if (result.enqueued > 0) log.info(result, 'email sweep: due drafts re-enqueued');
  });
  await jobs.schedule(EMAIL_SWEEP_QUEUE, '* * * * *');
}
