import type { FastifyBaseLogger } from 'fastify';
import type { JobDeps } from '../../platform/http/types.ts';
import { DOCUMENT_TEXT_QUEUE, runDocumentTextJob, type DocumentTextJobData } from './document-text.ts';

/** Documents: one text extraction job per upload (docs/knowledge.md#full-text-search). */
export async function registerDocumentJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const { jobs, database } = deps;
  const textDeps = {
    db: database.db,
    storage: deps.objectStorage,
    retriesLeft: async (jobId: string) => {
      const meta = await jobs.getJob(DOCUMENT_TEXT_QUEUE, jobId);
      return !!meta && meta.retryCount < meta.retryLimit;
    },
  };
  await jobs.define<DocumentTextJobData>(DOCUMENT_TEXT_QUEUE, async (data, job) => {
    const result = await runDocumentTextJob(textDeps, data, job);
    log.info({ document_uid: data.document_uid, result }, 'document text extraction');
  });
}
