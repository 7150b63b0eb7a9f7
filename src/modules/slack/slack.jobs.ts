import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { pruneSeenRequests } from './slack-interactions.service.ts';

export const SLACK_PRUNE_QUEUE = 'remit.slack.prune';

/** Hourly: the replay table forgets signed requests older than twice Slack's five-minute window. */
export async function registerSlackJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  await deps.jobs.define(SLACK_PRUNE_QUEUE, async () => {
    const pruned = await pruneSeenRequests(deps.database.db);
    if (pruned > 0) log.info({ pruned }, 'slack: old request signatures forgotten');
  });
  await deps.jobs.schedule(SLACK_PRUNE_QUEUE, '41 * * * *');
}
