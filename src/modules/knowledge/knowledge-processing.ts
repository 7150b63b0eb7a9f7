import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Db } from '../../platform/db/client.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import * as repo from './knowledge.repository.ts';
import { toKnowledgeView } from './knowledge-view.ts';
import { MAX_KNOWLEDGE_BYTES, PRESIGN_EXPIRES_S } from './knowledge.schemas.ts';
import {
  ExtractionError,
  extractPlainText,
  isKnowledgeContentType,
  looksLike,
  type KnowledgeContentType,
} from './text-extraction.ts';

/**
 * The knowledge workflow (CONTRACT §3, §6): one pg-boss job per confirmed upload, enqueued in the
 * confirm's transaction; its id is the document's `workflow_id`. The job reads the object once,
 * computes its size and SHA-256, checks its type again, extracts its plain text for search, and ends
 * the record `ready`, or `failed` with the reason. It acts only on a record still `processing`, so a
 * repeated job changes nothing.
 *
 * A sweep (every 5 minutes) deletes presigns never confirmed, with their object, once they have been
 * expired for another presign lifetime (15 minutes of grace for a confirm that arrives late).
 */
export const KNOWLEDGE_PROCESS_QUEUE = 'remit.knowledge.process';
export const KNOWLEDGE_SWEEP_QUEUE = 'remit.knowledge.sweep';
export const KNOWLEDGE_SWEEP_CRON = '*/5 * * * *';

export interface ProcessJobData {
  organization_uid: string;
  knowledge_document_uid: string;
}

export interface ProcessingDeps {
  db: Db;
  storage: ObjectStorage;
  /** Where the webhook events of a processing's outcome are delivered from. */
  jobs: Jobs;
}

/**
 * Ends the record `ready` or `failed` (only if it is still `processing`) with its webhook event,
 * `knowledge.processed` or `knowledge.failed`, in one transaction. False when it was settled already.
 */
async function finish(
  deps: Pick<ProcessingDeps, 'db' | 'jobs'>,
  organizationUid: string,
  uid: string,
  result: repo.ProcessingResult,
): Promise<boolean> {
  return deps.db.transaction(async (tx) => {
    const row = await repo.finishProcessing(tx, organizationUid, uid, result);
    if (!row) return false;
    const failed = row.status === 'failed';
    await emitEvent(
      tx,
      deps.jobs,
      { organizationUid: row.organizationUid },
      failed ? 'knowledge.failed' : 'knowledge.processed',
      { type: 'knowledge_document', uid: row.uid },
      { knowledge_document: toKnowledgeView(row), ...(failed ? { error: row.error } : {}) },
    );
    return true;
  });
}

/** The first `bytes` bytes of an object (fewer if it is shorter), or null when there is none. */
export async function readHead(storage: ObjectStorage, key: string, bytes: number): Promise<Buffer | null> {
  const object = await storage.getObject(key);
  if (!object) return null;
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of object.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= bytes) break;
    }
  } finally {
    object.body.destroy();
  }
  return Buffer.concat(chunks).subarray(0, bytes);
}

/** An object past the limit `readAll` was given. */
export class TooLarge extends Error {}

/** The whole object (it is at most 25 MB) with its SHA-256; stops reading past the limit. */
export async function readAll(body: Readable, limit: number): Promise<{ bytes: Buffer; sha256: string }> {
  const hash = crypto.createHash('sha256');
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length > limit) throw new TooLarge();
      hash.update(chunk);
      chunks.push(chunk);
    }
  } finally {
    body.destroy();
  }
  return { bytes: Buffer.concat(chunks), sha256: hash.digest('hex') };
}

const LABELS: Record<KnowledgeContentType, string> = {
  'application/pdf': 'PDF',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'DOCX',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'XLSX',
  'image/png': 'PNG',
  'image/jpeg': 'JPEG',
};

export type ProcessOutcome = 'ready' | 'failed' | 'skipped';

/**
 * Works one confirmed upload. Problems with the file itself end it `failed` with the reason; anything
 * else (storage or database unreachable) is thrown, for the job to be retried.
 */
export async function processKnowledgeDocument(
  deps: ProcessingDeps,
  data: ProcessJobData,
): Promise<ProcessOutcome> {
  const row = await repo.findKnowledgeDocument(deps.db, [data.organization_uid], data.knowledge_document_uid);
  if (!row || row.status !== 'processing') return 'skipped';
  const fail = async (error: string, found: { fileSize?: number; sha256?: string } = {}) => {
    const done = await finish(deps, row.organizationUid, row.uid, {
      status: 'failed',
      error,
      fileSize: found.fileSize ?? null,
      sha256: found.sha256 ?? null,
    });
    return done ? 'failed' : 'skipped';
  };

  const type = row.contentType;
  if (!isKnowledgeContentType(type)) return fail(`Files of type ${type} are not supported`);
  const object = await deps.storage.getObject(row.s3ObjectName);
  if (!object) return fail('The uploaded file is no longer in storage');
  let file: { bytes: Buffer; sha256: string };
  try {
    file = await readAll(object.body, MAX_KNOWLEDGE_BYTES);
  } catch (error) {
    if (error instanceof TooLarge)
      return fail(`The file is larger than ${MAX_KNOWLEDGE_BYTES} bytes (25 MB)`);
    throw error;
  }
  const found = { fileSize: file.bytes.length, sha256: file.sha256 };
  if (file.bytes.length === 0) return fail('The file is empty', found);
  if (!looksLike(type, file.bytes)) return fail(`The file is not a ${LABELS[type]} file`, found);
  let text: string | null;
  try {
    text = await extractPlainText(type, file.bytes);
  } catch (error) {
    if (error instanceof ExtractionError) return fail(error.message, found);
    throw error;
  }
  const done = await finish(deps, row.organizationUid, row.uid, {
    status: 'ready',
    fileSize: file.bytes.length,
    sha256: file.sha256,
    extractedText: text,
  });
  return done ? 'ready' : 'skipped';
}

/**
 * The job's handler: as `processKnowledgeDocument`, and when the last retry fails too, the record ends
 * `failed` with the reason instead of staying `processing` for ever.
 */
export async function runProcessJob(
  deps: ProcessingDeps,
  data: ProcessJobData,
  job: { id: string },
): Promise<ProcessOutcome> {
  try {
    return await processKnowledgeDocument(deps, data);
  } catch (error) {
    const meta = await deps.jobs.getJob(KNOWLEDGE_PROCESS_QUEUE, job.id).catch(() => null);
    if (meta && meta.retryCount < meta.retryLimit) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    await finish(deps, data.organization_uid, data.knowledge_document_uid, {
      status: 'failed',
      error: `Processing failed: ${reason.slice(0, 300)}`,
    });
    return 'failed';
  }
}

/**
 * Deletes presigns never confirmed, and their objects, once expired for longer than `graceSeconds`.
 * Each goes in a transaction of its own: the row is deleted only if still `presigned` (a confirm that
 * came first wins), then the object; if the object cannot be deleted the row stays for the next sweep.
 */
export async function sweepExpiredPresigns(
  deps: Pick<ProcessingDeps, 'db' | 'storage'>,
  options: { now?: Date; graceSeconds?: number; limit?: number } = {},
): Promise<{ swept: number }> {
  const now = options.now ?? new Date();
  const before = new Date(now.getTime() - (options.graceSeconds ?? PRESIGN_EXPIRES_S) * 1000);
  const expired = await repo.listExpiredPresigns(deps.db, before, options.limit ?? 500);
  let swept = 0;
  for (const presign of expired) {
    const deleted = await deps.db.transaction(async (tx) => {
      if (!(await repo.deletePresign(tx, presign.organizationUid, presign.uid))) return false;
      await deps.storage.deleteObject(presign.s3ObjectName);
      return true;
    });
    if (deleted) swept += 1;
  }
  return { swept };
}
