import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../http/types.ts';
import { purgeExpiredIdempotencyKeys } from '../http/idempotency.ts';
import { reconcileBillingSyncs } from '../../modules/billing/billing.service.ts';
import { invoiceViewForSync } from '../../modules/invoices/invoices.service.ts';
import {
  EMAIL_SEND_QUEUE,
  EMAIL_SWEEP_QUEUE,
  mailersFromConfig,
  runSendJob,
  sweepEmailDrafts,
  type SendJobData,
} from '../../modules/email/email-sending.ts';

import {
  AGENT_RUN_QUEUE,
  executeRun,
  failAbandonedRuns,
  type AgentRunJobData,
} from '../../modules/agents/agent-runs.service.ts';
import { AGENT_SCHEDULE_QUEUE, runDueSchedules } from '../../modules/agents/agent-schedules.ts';
import { sendDigests } from '../../modules/agents/notifications.service.ts';
import '../../modules/agents/collections-agent.ts';
import { createChatClient } from '../chat/chat.ts';
import { createTextGenerator } from '../llm/text-generator.ts';
import {
  METRIC_PRESETS_CRON,
  METRIC_PRESETS_QUEUE,
  runDailyPresetJob,
} from '../../modules/metrics/metric-presets.service.ts';

import {
  KNOWLEDGE_PROCESS_QUEUE,
  KNOWLEDGE_SWEEP_CRON,
  KNOWLEDGE_SWEEP_QUEUE,
  runProcessJob,
  sweepExpiredPresigns,
  type ProcessJobData,
} from '../../modules/knowledge/knowledge-processing.ts';

export const MAINTENANCE_QUEUE = 'remit.maintenance';
export const BILLING_RECONCILE_QUEUE = 'remit.billing.reconcile';
export const AGENT_DIGEST_QUEUE = 'remit.agent.digest';

/** Declares every queue and its worker; modules add theirs here. */
export async function registerJobs(deps: AppDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  await jobs.define(MAINTENANCE_QUEUE, async () => {
    await purgeExpiredIdempotencyKeys(database.db);
    // Runs a dead worker left `running` for over an hour: failed, so they do not look alive forever.
    const abandoned = await failAbandonedRuns(database.db);
    log.info(
      { abandoned_runs_failed: abandoned },
      'maintenance: idempotency keys purged, abandoned runs failed',
    );
  });
  await jobs.schedule(MAINTENANCE_QUEUE, '17 * * * *');

  // Every minute: re-send the committed state of invoices whose partner sync is still unconfirmed.
  await jobs.define(BILLING_RECONCILE_QUEUE, async () => {
    const result = await reconcileBillingSyncs(database.db, invoiceViewForSync, {
      allowPrivateNetworkTargets: deps.config.allowPrivateNetworkTargets,
      timeoutMs: deps.config.billingTimeoutMs,
      secrets: deps.secrets,
      metrics: deps.metrics,
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
    mailers: mailersFromConfig(deps.config, deps.secrets, deps.metrics),
    leaseSeconds: deps.config.emailSendLeaseS,
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

  // Agent runs: one job per run, enqueued with the run row; schedules checked every minute; runs a
  // dead worker left `running` failed by the maintenance hour; digests daily (docs/agents.md).
  const runEnv = {
    db: database.db,
    jobs,
    storage: deps.objectStorage,
    config: deps.config,
    chat: createChatClient(deps.config.chat, deps.metrics),
    generator: createTextGenerator(deps.config.llm, deps.metrics),
    mailers: sending.mailers,
  };
  await jobs.define<AgentRunJobData>(AGENT_RUN_QUEUE, async (data) => {
    const result = await executeRun(runEnv, data);
    log.info({ run_uid: data.run_uid, result }, 'agent run');
  });
  await jobs.define(AGENT_SCHEDULE_QUEUE, async () => {
    const started = await runDueSchedules(database.db, jobs);
    if (started > 0) log.info({ started }, 'agent schedules: runs started');
  });
  await jobs.schedule(AGENT_SCHEDULE_QUEUE, '* * * * *');
  await jobs.define(AGENT_DIGEST_QUEUE, async () => {
    const sent = await sendDigests({ db: database.db, chat: runEnv.chat });
    log.info({ digests: sent }, 'agent digests');
  });
  await jobs.schedule(AGENT_DIGEST_QUEUE, '0 8 * * *');

  // Preset receivables metrics: daily snapshot values for the day that just ended (docs/metrics.md).
  await jobs.define(METRIC_PRESETS_QUEUE, async () => {
    const result = await runDailyPresetJob(database.db, new Date(), (organizationUid, error) =>
      log.error({ err: error, organization_uid: organizationUid }, 'metric presets: computation failed'),
    );
    log.info(result, 'metric presets computed');
  });
  await jobs.schedule(METRIC_PRESETS_QUEUE, METRIC_PRESETS_CRON);

  // Knowledge uploads: one processing job per confirmed upload; presigns never confirmed swept every
  // 5 minutes, with their objects (docs/knowledge.md).
  const knowledge = { db: database.db, storage: deps.objectStorage, jobs };
  await jobs.define<ProcessJobData>(KNOWLEDGE_PROCESS_QUEUE, async (data, job) => {
    const result = await runProcessJob(knowledge, data, job);
    log.info({ knowledge_document_uid: data.knowledge_document_uid, result }, 'knowledge processing');
  });
  await jobs.define(KNOWLEDGE_SWEEP_QUEUE, async () => {
    const result = await sweepExpiredPresigns(knowledge);
    if (result.swept > 0) log.info(result, 'knowledge sweep: expired presigns removed');
  });
  await jobs.schedule(KNOWLEDGE_SWEEP_QUEUE, KNOWLEDGE_SWEEP_CRON);
}
