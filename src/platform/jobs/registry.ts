import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../http/types.ts';
import { purgeExpiredIdempotencyKeys } from '../http/idempotency.ts';
import { reconcileBillingSyncs } from '../../modules/billing/billing.service.ts';
import { invoiceViewForSync } from '../../modules/invoices/invoices.service.ts';
import {
  DEFAULT_LEASE_SECONDS,
  EMAIL_SEND_QUEUE,
  EMAIL_SWEEP_QUEUE,
  mailersFromConfig,
  runSendJob,
  sweepEmailDrafts,
  type SendJobData,
} from '../../modules/email/email-sending.ts';

import { AGENT_RUN_QUEUE } from '../../modules/agents/agent-runs.service.ts';

export const MAINTENANCE_QUEUE = 'remit.maintenance';
export const BILLING_RECONCILE_QUEUE = 'remit.billing.reconcile';

/** Declares every queue and its worker; modules add theirs here. */
export async function registerJobs(deps: AppDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  await jobs.define(MAINTENANCE_QUEUE, async () => {
    await purgeExpiredIdempotencyKeys(database.db);
    log.info('maintenance: expired idempotency keys purged');
  });
  await jobs.schedule(MAINTENANCE_QUEUE, '17 * * * *');

  // Every minute: re-send the committed state of invoices whose partner sync is still unconfirmed.
  await jobs.define(BILLING_RECONCILE_QUEUE, async () => {
    const result = await reconcileBillingSyncs(database.db, invoiceViewForSync, {
      allowPrivateNetworkTargets: deps.config.allowPrivateNetworkTargets,
      timeoutMs: deps.config.billingTimeoutMs,
      olderThanSeconds: 30,
    });
    if (result.checked > 0) log.info(result, 'billing sync reconciled');
  });
  await jobs.schedule(BILLING_RECONCILE_QUEUE, '* * * * *');

  // Scheduled email: one job per draft at its planned_send_at, and a sweep every minute for due drafts
  // without a pending job (docs/email-sending.md).
  const sending = {
    db: database.db,
    storage: deps.objectStorage,
    mailers: mailersFromConfig(deps.config),
    leaseSeconds: DEFAULT_LEASE_SECONDS,
  };
  await jobs.define<SendJobData>(EMAIL_SEND_QUEUE, async (data) => {
    const result = await runSendJob(sending, data);
    if (result === 'sent' || result === 'failed') {
      log.info({ draft_uid: data.draft_uid, result }, 'email send');
    }
  });
  await jobs.define(EMAIL_SWEEP_QUEUE, async () => {
    const result = await sweepEmailDrafts({ db: database.db, jobs });
    if (result.enqueued > 0) log.info(result, 'email sweep: due drafts re-enqueued');
  });
  await jobs.schedule(EMAIL_SWEEP_QUEUE, '* * * * *');

  // Agent runs: one job per run, enqueued with the run row (docs/agents.md).
  await jobs.define(AGENT_RUN_QUEUE);
}
