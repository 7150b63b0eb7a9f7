import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../http/types.ts';
import { purgeExpiredIdempotencyKeys } from '../http/idempotency.ts';

export const MAINTENANCE_QUEUE = 'remit.maintenance';

/** Declares every queue and its worker; modules add theirs here. */
export async function registerJobs(deps: AppDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  await jobs.define(MAINTENANCE_QUEUE, async () => {
    await purgeExpiredIdempotencyKeys(database.db);
    log.info('maintenance: expired idempotency keys purged');
  });
  await jobs.schedule(MAINTENANCE_QUEUE, '17 * * * *');
}
