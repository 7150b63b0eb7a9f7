import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import {
  METRIC_PRESETS_CRON,
  METRIC_PRESETS_QUEUE,
  METRIC_REFRESH_QUEUE,
  refreshPresetValues,
  runDailyPresetJob,
} from './metric-presets.service.ts';

/**
 * Preset receivables metrics (docs/metrics.md): the daily snapshot of the day that just ended (and any
 * day the job missed), and the refresh of today's values shortly after invoices or payments change.
 */
export async function registerMetricJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  await jobs.define(
    METRIC_PRESETS_QUEUE,
    async () => {
      const result = await runDailyPresetJob(database.db, new Date(), (organizationUid, error) =>
        log.error({ err: error, organization_uid: organizationUid }, 'metric presets: computation failed'),
      );
      log.info(result, 'metric presets computed');
    },
    // A run that fills missed days (up to 400 per organization) can take long: not presumed dead at
    // 15 minutes. A retry resumes at each organization's mark anyway.
    { expireInSeconds: 4 * 3600 },
  );
  await jobs.schedule(METRIC_PRESETS_QUEUE, METRIC_PRESETS_CRON);
  await jobs.define<{ organization_uid: string }>(METRIC_REFRESH_QUEUE, async (data) => {
    const result = await refreshPresetValues(database.db, data.organization_uid, new Date());
    log.debug(result, 'metric presets refreshed');
  });
}
