import os from 'node:os';
import type { Piscina } from 'piscina';
import type { InvoiceDocument } from './invoice-pdf.ts';

/**
 * Where invoice PDFs are rendered: a small pool of worker threads (piscina) that starts with the first
 * rendering and stops after a minute idle, as the knowledge text extraction's. Rendering is synchronous
 * CPU work — about 0.25 ms a line once warm, and 0.3 s for the first document of a thread (pdfkit and
 * its font metrics load) — which on the main thread would stall every request of the process for a
 * long invoice. A rendering that takes longer than the timeout is stopped (its thread terminated).
 */

const THREADS = Math.min(2, os.availableParallelism());
const TIMEOUT_MS = 60_000;

let pool: Piscina<InvoiceDocument, Uint8Array> | undefined;

/** The thread's module beside this one: `.js` when running compiled (dist/), `.ts` from the source. */
function workerModule(): { filename: string; execArgv?: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const filename = new URL(`./invoice-pdf-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href;
  if (!fromSource || process.execArgv.some((arg) => arg.includes('tsx'))) return { filename };
  return { filename, execArgv: [...process.execArgv, '--import', import.meta.resolve('tsx')] };
}

async function renderingPool(): Promise<Piscina<InvoiceDocument, Uint8Array>> {
  if (!pool) {
    const { Piscina } = await import('piscina');
    pool ??= new Piscina<InvoiceDocument, Uint8Array>({
      ...workerModule(),
      minThreads: 0,
      maxThreads: THREADS,
      idleTimeout: 60_000,
    });
  }
  return pool;
}

/** The PDF's bytes, rendered in a rendering thread. */
export async function renderInvoicePdfInThread(document: InvoiceDocument): Promise<Buffer> {
  const threads = await renderingPool();
  const bytes = await threads.run(document, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Stops the pool's threads (at shutdown); a later rendering starts a new one. */
export async function closeInvoicePdfRendering(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.close({ force: true });
}
