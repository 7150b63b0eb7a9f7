import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import {
  deliverDueWebhooks,
  deliverWebhook,
  purgeOldEvents,
  useDeliveryQueue,
  WEBHOOK_DELIVER_QUEUE,
  webhookOptionsOf,
} from './webhooks.service.ts';

export const WEBHOOK_SWEEP_QUEUE = 'remit.webhooks.sweep';
export const EVENT_RETENTION_QUEUE = 'remit.webhooks.retention';

interface DeliverJobData {
  organization_uid: string;
  delivery_uid: string;
}

/**
 * One job per delivery attempt (enqueued with the event, and with each retry's time), a sweep every
 * minute for whatever a job missed (a killed worker's lease ran out, a retry whose job was lost), and
 * the daily 30-day purge of events.
 */
export async function registerWebhookJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  const options = webhookOptionsOf(deps);
  await jobs.define<DeliverJobData>(WEBHOOK_DELIVER_QUEUE, async (data) => {
    await deliverWebhook(database.db, options, data.delivery_uid);
  });
  useDeliveryQueue(jobs);
  await jobs.define(WEBHOOK_SWEEP_QUEUE, async () => {
    const counts = await deliverDueWebhooks(database.db, options);
    if (counts.succeeded + counts.failed + counts.abandoned > 0) log.info(counts, 'webhook deliveries swept');
  });
  await jobs.schedule(WEBHOOK_SWEEP_QUEUE, '* * * * *');
  await jobs.define(EVENT_RETENTION_QUEUE, async () => {
    const purged = await purgeOldEvents(database.db);
    if (purged > 0) log.info({ purged }, 'events past 30 days purged');
  });
  await jobs.schedule(EVENT_RETENTION_QUEUE, '17 3 * * *');
}
