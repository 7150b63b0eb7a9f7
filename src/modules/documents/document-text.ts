import type { Db } from '../../platform/db/client.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { normalizeContentType } from '../../platform/storage/multipart-upload.ts';
import {
  ExtractionError,
  extractPlainText,
  isKnowledgeContentType,
  looksLike,
  MAX_EXTRACTED_CHARS,
  MAX_KNOWLEDGE_BYTES,
} from '../knowledge/text-extraction.ts';
import { readAll, TooLarge } from '../knowledge/knowledge-processing.ts';
import * as repo from './documents.repository.ts';

/**
 * A document's text, for search (docs/knowledge.md#full-text-search): one job per upload, enqueued in
 * the transaction that writes its row, run like the knowledge workflow's extraction (the same extractors,
 * in the same pool of worker threads). PDF, DOCX and XLSX are read as knowledge documents are; plain
 * text types (`text/plain`, `text/markdown`, `text/csv`) as UTF-8; anything else has no text (`none`).
 * The job acts only on a row still `pending`, so a repeated job changes nothing.
 */
export const DOCUMENT_TEXT_QUEUE = 'remit.documents.text';

export interface DocumentTextJobData {
  organization_uid: string;
  document_uid: string;
}

const PLAIN_TEXT_TYPES = new Set(['text/plain', 'text/markdown', 'text/csv']);

function plainText(bytes: Buffer): string {
  const text = bytes
    .toString('utf8')
    .replace(/\u0000/g, '')
    .replace(/\r\n?/g, '\n')
    .trim();
  return text.length > MAX_EXTRACTED_CHARS ? text.slice(0, MAX_EXTRACTED_CHARS) : text;
}

export type DocumentTextOutcome = 'ready' | 'none' | 'failed' | 'skipped';

/**
 * Extracts one document's text and records it (`ready`, or `none` when the type carries none or the
 * file holds no words, `failed` when the file cannot be read as its type). Storage or database trouble
 * is thrown, for the job to be retried.
 */
export async function extractDocumentText(
  deps: { db: Db; storage: ObjectStorage },
  data: DocumentTextJobData,
): Promise<DocumentTextOutcome> {
  const row = await repo.findDocument(deps.db, [data.organization_uid], data.document_uid);
  if (!row || row.textStatus !== 'pending') return 'skipped';
  const settle = async (status: 'ready' | 'none' | 'failed', text: string | null) =>
    (await repo.recordDocumentText(deps.db, row.organizationUid, row.uid, status, text)) ? status : 'skipped';
  const type = normalizeContentType(row.contentType).split(';')[0]!.trim().toLowerCase();
  const readable = isKnowledgeContentType(type) || PLAIN_TEXT_TYPES.has(type);
  if (!readable) return settle('none', null);
  const object = await deps.storage.getObject(row.storageKey);
  if (!object) return settle('none', null);
  let bytes: Buffer;
  try {
    ({ bytes } = await readAll(object.body, MAX_KNOWLEDGE_BYTES));
  } catch (error) {
    // Uploads are limited to 25 MB; a larger object is not read for text.
    if (error instanceof TooLarge) return settle('none', null);
    throw error;
  }
  if (bytes.length === 0) return settle('none', null);
  let text: string | null;
  if (isKnowledgeContentType(type)) {
    if (!looksLike(type, bytes)) return settle('failed', null);
    try {
      text = await extractPlainText(type, bytes);
    } catch (error) {
      if (error instanceof ExtractionError) return settle('failed', null);
      throw error;
    }
  } else {
    text = plainText(bytes);
  }
  return text ? settle('ready', text) : settle('none', null);
}

/** The job's handler: after the last retry a document ends `failed` rather than `pending` for ever. */
export async function runDocumentTextJob(
  deps: { db: Db; storage: ObjectStorage; retriesLeft: (jobId: string) => Promise<boolean> },
  data: DocumentTextJobData,
  job: { id: string },
): Promise<DocumentTextOutcome> {
  try {
    return await extractDocumentText(deps, data);
  } catch (error) {
    if (await deps.retriesLeft(job.id).catch(() => false)) throw error;
    await repo.recordDocumentText(deps.db, data.organization_uid, data.document_uid, 'failed', null);
    return 'failed';
  }
}
