import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { invoiceViewForSync } from '../invoices/invoices.service.ts';
import { reconcileBillingSyncs } from './billing.service.ts';

export const BILLING_RECONCILE_QUEUE = 'remit.billing.reconcile';

/** Every minute: re-send the committed state of invoices whose partner sync is still unconfirmed. */
export async function registerBillingJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  await jobs.define(BILLING_RECONCILE_QUEUE, async () => {
    const result = await reconcileBillingSyncs(database.db, jobs, invoiceViewForSync, {
      allowPrivateNetworkTargets: deps.config.allowPrivateNetworkTargets,
      timeoutMs: deps.config.billingTimeoutMs,
      secrets: deps.secrets,
      metrics: deps.metrics,
      olderThanSeconds: 30,
    });
    if (result.checked > 0) log.info(result, 'billing sync reconciled');
  });
  await jobs.schedule(BILLING_RECONCILE_QUEUE, '* * * * *');
}
