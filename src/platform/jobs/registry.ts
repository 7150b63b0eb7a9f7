import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../http/types.ts';
import { purgeExpiredIdempotencyKeys } from '../http/idempotency.ts';
import { reconcileBillingSyncs } from '../../modules/billing/billing.service.ts';
import { invoiceViewForSync } from '../../modules/invoices/invoices.service.ts';

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
}
