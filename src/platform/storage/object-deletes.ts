import type { FastifyBaseLogger } from 'fastify';
import type { DbOrTx } from '../db/client.ts';
import type { JobDeps } from '../http/types.ts';
import type { EnqueueOptions, Jobs } from '../jobs/jobs.ts';

/**
 * Removing a stored object once the row that named it is gone (a knowledge document, an invoice
 * attachment). The object store is a network call, so it never runs inside the deleting transaction;
 * instead the transaction enqueues this job, which exists exactly when the delete commits. The job
 * then deletes the object, and is retried when the store fails, so neither a crash after the commit
 * nor a storage outage leaves the object behind for good (docs/storage.md#deleting-objects).
 *
 * Deleting an object that is already gone is not an error (S3's rule, and the embedded store's), so a
 * job that runs twice does no harm.
 */
export const OBJECT_DELETE_QUEUE = 'remit.storage.delete_object';

export interface ObjectDeleteJobData {
  /** For the job's log lines only: the key is what is deleted. */
  organization_uid: string;
  key: string;
}

/**
 * pg-boss's exponential backoff (from a 1-second base, with jitter): the first retries come within
 * seconds, later ones hours apart (at most about 18 h between two), 20 retries spanning about 3 days.
 */
export const OBJECT_DELETE_RETRIES: EnqueueOptions = { retryLimit: 20, retryBackoff: true };

/**
 * Enqueues the removal of `key` in `tx`: call it in the transaction that deletes the row naming the
 * object. `startAfter` defers it (an upload form still valid could store the object again until then).
 */
export async function scheduleObjectDelete(
  tx: DbOrTx,
  jobs: Jobs,
  object: { organizationUid: string; key: string; startAfter?: Date },
): Promise<string> {
  return jobs.enqueue<ObjectDeleteJobData>(
    tx,
    OBJECT_DELETE_QUEUE,
    { organization_uid: object.organizationUid, key: object.key },
    { ...OBJECT_DELETE_RETRIES, ...(object.startAfter ? { startAfter: object.startAfter } : {}) },
  );
}

/** Declares the queue and its worker (composition root: the `storage` entry of MODULES). */
export async function registerObjectDeleteJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  const storage = deps.objectStorage;
  await deps.jobs.define<ObjectDeleteJobData>(OBJECT_DELETE_QUEUE, async (data, job) => {
    try {
      await storage.deleteObject(data.key);
    } catch (error) {
      // Thrown again: pg-boss retries the job with backoff.
      log.warn({ err: error, storage_key: data.key, job_id: job.id }, 'object delete failed; will retry');
      throw error;
    }
    log.debug({ storage_key: data.key }, 'object deleted');
  });
}
