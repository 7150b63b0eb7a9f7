import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { accountMailers } from '../email/email-sending.ts';
import {
  AGENT_RUN_QUEUE,
  executeRun,
  failAbandonedRuns,
  type AgentRunJobData,
} from './agent-runs.service.ts';
import { releaseLapsedClaims, stopUnclaimedRuns } from './agent-run-claims.service.ts';
import { AGENT_SCHEDULE_QUEUE, runDueSchedules } from './agent-schedules.ts';
import { sendDigests } from './notifications.service.ts';
import {
  CHAT_DELIVERY_QUEUE,
  CHAT_REFRESH_QUEUE,
  CHAT_SWEEP_QUEUE,
  deliverNotification,
  refreshApprovalMessages,
  sweepStrandedDeliveries,
  type DeliveryJobData,
  type RefreshJobData,
} from './notification-delivery.ts';

export const AGENT_DIGEST_QUEUE = 'remit.agent.digest';
export const AGENT_MAINTENANCE_QUEUE = 'remit.agent.maintenance';
export const AGENT_LEASES_QUEUE = 'remit.agent.leases';

/**
 * Agent runs: one job per run, enqueued with the run row; schedules checked every minute; outside
 * runtimes' lapsed leases taken back every minute; runs a dead worker left `running` failed, and runs
 * no runtime claimed stopped, hourly; digests daily (docs/agents.md).
 */
export async function registerAgentJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  const runEnv = {
    db: database.db,
    jobs,
    storage: deps.objectStorage,
    config: deps.config,
    chat: deps.clients.chat,
    generator: deps.clients.generator,
    mailers: accountMailers(deps.clients.mail, deps.secrets),
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
    const sent = await sendDigests({ db: database.db, chat: deps.clients.chat, jobs });
    log.info({ digests: sent }, 'agent digests');
  });
  await jobs.schedule(AGENT_DIGEST_QUEUE, '0 8 * * *');
  // Runs a dead worker left `running` for over an hour: failed, so they do not look alive forever.
  // Runs no outside runtime claimed for days: stopped, so an old approval is not acted on at last.
  await jobs.define(AGENT_MAINTENANCE_QUEUE, async () => {
    const abandoned = await failAbandonedRuns(database.db, jobs);
    if (abandoned > 0) log.info({ abandoned_runs_failed: abandoned }, 'abandoned agent runs failed');
    const unclaimed = await stopUnclaimedRuns(database.db);
    if (unclaimed > 0) log.info({ unclaimed_runs_stopped: unclaimed }, 'unclaimed agent runs stopped');
  });
  await jobs.schedule(AGENT_MAINTENANCE_QUEUE, '17 * * * *');

  // Chat posts (docs/agents.md#notifications): one job per post, retried by the post's own count.
  const deliveryDeps = {
    db: database.db,
    chat: deps.clients.chat,
    jobs,
    publicBaseUrl: deps.config.publicBaseUrl,
  };
  // Longer than a post's lease: a job whose worker died is retried only once its attempt counts as cut short.
  await jobs.define<DeliveryJobData>(
    CHAT_DELIVERY_QUEUE,
    async (data) => {
      const result = await deliverNotification(deliveryDeps, data);
      if (result === 'retry' || result === 'failed')
        log.warn({ notification_uid: data.notification_uid, result }, 'chat post not delivered');
    },
    { expireInSeconds: 180 },
  );
  await jobs.define<RefreshJobData>(CHAT_REFRESH_QUEUE, async (data) => {
    await refreshApprovalMessages(deliveryDeps, data);
  });
  await jobs.define(CHAT_SWEEP_QUEUE, async () => {
    const swept = await sweepStrandedDeliveries(deliveryDeps);
    if (swept > 0) log.warn({ swept }, 'chat posts without a job enqueued again');
  });
  await jobs.schedule(CHAT_SWEEP_QUEUE, '* * * * *');
  // Outside runtimes' claims whose lease lapsed: pending again (or failed after too many lapses).
  await jobs.define(AGENT_LEASES_QUEUE, async () => {
    const result = await releaseLapsedClaims({ db: database.db, jobs, chat: deps.clients.chat });
    if (result.released + result.failed > 0) log.info(result, 'lapsed agent run claims released');
  });
  await jobs.schedule(AGENT_LEASES_QUEUE, '* * * * *');
}
