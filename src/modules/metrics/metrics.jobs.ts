import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { METRIC_PRESETS_CRON, METRIC_PRESETS_QUEUE, runDailyPresetJob } from './metric-presets.service.ts';

/** Preset receivables metrics: daily snapshot values for the day that just ended (docs/metrics.md). */
export async function registerMetricJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  await jobs.define(METRIC_PRESETS_QUEUE, async () => {
    const result = await runDailyPresetJob(database.db, new Date(), (organizationUid, error) =>
      log.error({ err: error, organization_uid: organizationUid }, 'metric presets: computation failed'),
    );
    log.info(result, 'metric presets computed');
  });
  await jobs.schedule(METRIC_PRESETS_QUEUE, METRIC_PRESETS_CRON);
}
