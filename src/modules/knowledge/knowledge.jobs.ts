import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import {
  KNOWLEDGE_PROCESS_QUEUE,
  KNOWLEDGE_SWEEP_CRON,
  KNOWLEDGE_SWEEP_QUEUE,
  runProcessJob,
  sweepExpiredPresigns,
  type ProcessJobData,
} from './knowledge-processing.ts';

/**
 * Knowledge uploads: one processing job per confirmed upload; presigns never confirmed swept every
 * 5 minutes, with their objects (docs/knowledge.md).
 */
export async function registerKnowledgeJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  const knowledge = { db: database.db, storage: deps.objectStorage, jobs };
  await jobs.define<ProcessJobData>(KNOWLEDGE_PROCESS_QUEUE, async (data, job) => {
    const result = await runProcessJob(knowledge, data, job);
    log.info({ knowledge_document_uid: data.knowledge_document_uid, result }, 'knowledge processing');
  });
  await jobs.define(KNOWLEDGE_SWEEP_QUEUE, async () => {
    const result = await sweepExpiredPresigns(knowledge);
    if (result.swept > 0) log.info(result, 'knowledge sweep: expired presigns removed');
  });
  await jobs.schedule(KNOWLEDGE_SWEEP_QUEUE, KNOWLEDGE_SWEEP_CRON);
}
