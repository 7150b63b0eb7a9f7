import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { purgeExpiredAuditEvents } from './audit.service.ts';

export const AUDIT_PURGE_QUEUE = 'remit.audit.purge';
/** Daily, at a quiet minute (UTC). */
export const AUDIT_PURGE_CRON = '43 3 * * *';

/** Audit retention (AUDIT_RETENTION_DAYS, docs/audit-log.md#retention): old events go once a day. */
export async function registerAuditJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  await deps.jobs.define(AUDIT_PURGE_QUEUE, async () => {
    const deleted = await runAuditRetention(deps);
    if (deleted > 0) log.info({ deleted }, 'audit retention: expired events deleted');
  });
  await deps.jobs.schedule(AUDIT_PURGE_QUEUE, AUDIT_PURGE_CRON);
}

/** The purge job's work, on the process clock (tests move it with a fake clock). */
export function runAuditRetention(deps: Pick<JobDeps, 'database' | 'config'>): Promise<number> {
  return purgeExpiredAuditEvents(deps.database.db, deps.config.auditRetentionDays, new Date());
}
