import os from 'node:os';
import type { Piscina } from 'piscina';
import type { ExtractionOutcome, ExtractionTask } from './extraction-worker.ts';

/**
 * The knowledge document types (interface 2.3), how to recognise each from its first bytes, and the
 * plain text of each, for search. The text is read off the event loop, in a small pool of worker
 * threads (piscina) that starts with the first extraction: a large PDF or spreadsheet takes seconds of
 * CPU, which on the main thread would stall every request and job of the process. The extractors
 * (`text-extractors.ts`) load only inside those threads.
 */

export const KNOWLEDGE_CONTENT_TYPES = [
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'image/png',
  'image/jpeg',
] as const;
export type KnowledgeContentType = (typeof KNOWLEDGE_CONTENT_TYPES)[number];

/** Largest knowledge file (interface §8: 25 MB, enforced by the upload policy and again at confirm). */
export const MAX_KNOWLEDGE_BYTES = 25 * 1024 * 1024;

/** Extracted text kept per document, in characters: enough for search, bounded for the row. */
export const MAX_EXTRACTED_CHARS = 1_000_000;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const ZIP_SIGNATURE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const JPEG_SIGNATURE = Buffer.from([0xff, 0xd8, 0xff]);

/** How many leading bytes `looksLike` needs (PDF readers accept the header anywhere in the first 1 KB). */
export const SNIFF_BYTES = 1024;

/**
 * Whether the file's first bytes fit its declared type: `%PDF-` (in the first 1 KB), a zip archive for
 * DOCX and XLSX (which of the two is told by reading it), the PNG signature, the JPEG SOI marker.
 */
export function looksLike(contentType: KnowledgeContentType, head: Buffer): boolean {
  switch (contentType) {
    case 'application/pdf':
      return head.subarray(0, SNIFF_BYTES).includes('%PDF-', 0, 'latin1');
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
    case 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet':
      return head.subarray(0, 4).equals(ZIP_SIGNATURE);
    case 'image/png':
      return head.subarray(0, 8).equals(PNG_SIGNATURE);
    case 'image/jpeg':
      return head.subarray(0, 3).equals(JPEG_SIGNATURE);
  }
}

export function isKnowledgeContentType(value: string): value is KnowledgeContentType {
  return (KNOWLEDGE_CONTENT_TYPES as readonly string[]).includes(value);
}

/** A file that cannot be read as its type; the message is the reason shown on the document. */
export class ExtractionError extends Error {
  override name = 'ExtractionError';
}

export interface ExtractionSettings {
  /** Threads at most; they start on demand and stop after a minute idle. */
  threads: number;
  /** Past this an extraction is stopped (its thread is terminated) and the file fails. */
  timeoutMs: number;
}

let settings: ExtractionSettings = {
  threads: Math.min(2, os.availableParallelism()),
  timeoutMs: 120_000,
};
let pool: Piscina<ExtractionTask, ExtractionOutcome> | undefined;

/** Sets the pool's bounds (EXTRACTION_THREADS, EXTRACTION_TIMEOUT_S); the pool built next uses them. */
export function configureTextExtraction(next: Partial<ExtractionSettings>): void {
  settings = { ...settings, ...next };
}

/**
 * The thread's module beside this one: `.js` when running compiled (dist/), `.ts` from the source. A
 * thread inherits the process's `execArgv`, so under `node --import tsx` it loads `.ts` as the process
 * does; a runner that loads TypeScript another way (vitest) gives the thread tsx's loader explicitly.
 */
function workerModule(): { filename: string; execArgv?: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const filename = new URL(`./extraction-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href;
  if (!fromSource || process.execArgv.some((arg) => arg.includes('tsx'))) return { filename };
  return { filename, execArgv: [...process.execArgv, '--import', import.meta.resolve('tsx')] };
}

async function extractionPool(): Promise<Piscina<ExtractionTask, ExtractionOutcome>> {
  if (!pool) {
    const { Piscina } = await import('piscina');
    pool ??= new Piscina<ExtractionTask, ExtractionOutcome>({
      ...workerModule(),
      minThreads: 0,
      maxThreads: settings.threads,
      idleTimeout: 60_000,
    });
  }
  return pool;
}

/** Stops the pool's threads (at shutdown, once jobs have stopped); a later extraction starts a new one. */
export async function closeTextExtraction(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.close({ force: true });
}

/**
 * As `extractPlainText`, and which thread read the file. Throws `ExtractionError` for a file that is
 * not readable as its type, larger than the upload limit, or not read within the timeout.
 */
export async function runExtraction(
  contentType: KnowledgeContentType,
  bytes: Buffer,
): Promise<{ text: string | null; threadId: number }> {
  if (bytes.length > MAX_KNOWLEDGE_BYTES) {
    throw new ExtractionError(`The file is larger than ${MAX_KNOWLEDGE_BYTES} bytes (25 MB)`);
  }
  if (contentType === 'image/png' || contentType === 'image/jpeg') return { text: null, threadId: -1 };
  const threads = await extractionPool();
  let outcome: ExtractionOutcome;
  try {
    outcome = await threads.run({ contentType, bytes }, { signal: AbortSignal.timeout(settings.timeoutMs) });
  } catch (error) {
    const { name, code } = error as { name?: string; code?: string };
    // The file is what made the thread run out of time or memory; trying it again would end the same way.
    if (name === 'AbortError' || name === 'TimeoutError') {
      throw new ExtractionError(`The file's text could not be read within ${settings.timeoutMs / 1000} s`);
    }
    if (code === 'ERR_WORKER_OUT_OF_MEMORY') {
      throw new ExtractionError("The file's text could not be read: it needs too much memory");
    }
    throw error;
  }
  if (!outcome.ok) throw new ExtractionError(outcome.message);
  return { text: outcome.text, threadId: outcome.threadId };
}

/**
 * The plain text of a file of one of the knowledge types, or null for images (they carry none).
 * Throws `ExtractionError` when the file is not a readable file of that type.
 */
export async function extractPlainText(
  contentType: KnowledgeContentType,
  bytes: Buffer,
): Promise<string | null> {
  return (await runExtraction(contentType, bytes)).text;
}
