import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import {
  deliverDueWebhooks,
  deliverWebhook,
  purgeOldEvents,
  sendDisabledNotice,
  WEBHOOK_DELIVER_QUEUE,
  WEBHOOK_DISABLED_NOTICE_QUEUE,
  webhookOptionsOf,
  type DisabledNoticeJobData,
} from './webhooks.service.ts';

export const WEBHOOK_SWEEP_QUEUE = 'remit.webhooks.sweep';
export const EVENT_RETENTION_QUEUE = 'remit.webhooks.retention';

interface DeliverJobData {
  organization_uid: string;
  delivery_uid: string;
}

/**
 * One job per delivery attempt (enqueued with the event, with each retry's time, and with each
 * claim for the moment its lease ends), a sweep every minute for whatever a job missed, the notice to
 * admins of an endpoint disabled, and the daily 30-day purge of events.
 */
export async function registerWebhookJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  const options = webhookOptionsOf(deps);
  // Several attempts at once (WEBHOOK_CONCURRENCY), so an endpoint that hangs holds its share of the
  // workers and not the queue; the in-flight caps keep one endpoint or organization from taking them all.
  await jobs.define<DeliverJobData>(
    WEBHOOK_DELIVER_QUEUE,
    async (data) => {
      await deliverWebhook(database.db, options, data.delivery_uid);
    },
    { concurrency: deps.config.webhookConcurrency },
  );
  await jobs.define(WEBHOOK_SWEEP_QUEUE, async () => {
    const counts = await deliverDueWebhooks(database.db, options);
    if (counts.succeeded + counts.failed + counts.abandoned > 0) log.info(counts, 'webhook deliveries swept');
  });
  await jobs.schedule(WEBHOOK_SWEEP_QUEUE, '* * * * *');
  await jobs.define<DisabledNoticeJobData>(WEBHOOK_DISABLED_NOTICE_QUEUE, async (data) => {
    const admins = await sendDisabledNotice(
      { db: database.db, config: deps.config, mail: deps.clients.mail },
      data,
    );
    log.info({ endpoint_uid: data.endpoint_uid, admins }, 'webhook endpoint disabled: admins told');
  });
  await jobs.define(EVENT_RETENTION_QUEUE, async () => {
    const purged = await purgeOldEvents(database.db);
    if (purged > 0) log.info({ purged }, 'events past 30 days purged');
  });
  await jobs.schedule(EVENT_RETENTION_QUEUE, '17 3 * * *');
}
