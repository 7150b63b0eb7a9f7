import { threadId } from 'node:worker_threads';
import { ExtractionError, type KnowledgeContentType } from './text-extraction.ts';
import { extractInThisThread } from './text-extractors.ts';

export interface ExtractionTask {
  contentType: KnowledgeContentType;
  bytes: Uint8Array;
}

/** What crosses back to the caller: an error's class does not survive the thread boundary, its kind does. */
export type ExtractionOutcome =
  { ok: true; text: string | null; threadId: number } | { ok: false; message: string; threadId: number };

/** The piscina task: runs in an extraction thread, never in the thread that serves requests. */
export default async function extract(task: ExtractionTask): Promise<ExtractionOutcome> {
  const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  try {
    return { ok: true, text: await extractInThisThread(task.contentType, bytes), threadId };
  } catch (error) {
    if (error instanceof ExtractionError) return { ok: false, message: error.message, threadId };
    throw error;
  }
}
