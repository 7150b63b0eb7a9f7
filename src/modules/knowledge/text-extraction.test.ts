import { performance } from 'node:perf_hooks';
import { threadId } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CONTENT_TYPES,
  docx,
  pdf,
  sampleFile,
  xlsx,
  zip,
  type SampleKind,
} from '../../../test/helpers/sample-files.ts';
import {
  closeTextExtraction,
  configureTextExtraction,
  ExtractionError,
  extractPlainText,
  KNOWLEDGE_CONTENT_TYPES,
  looksLike,
  MAX_EXTRACTED_CHARS,
  MAX_KNOWLEDGE_BYTES,
  runExtraction,
} from './text-extraction.ts';
import { extractInThisThread } from './text-extractors.ts';

const KINDS = Object.keys(CONTENT_TYPES) as SampleKind[];

describe('looksLike', () => {
  it('recognises a real file of each supported type, and refuses the others', () => {
    expect([...KNOWLEDGE_CONTENT_TYPES].sort()).toEqual(Object.values(CONTENT_TYPES).sort());
    for (const kind of KINDS) {
      const file = sampleFile(kind);
      for (const other of KINDS) {
        const expected =
          kind === other || (['docx', 'xlsx'].includes(kind) && ['docx', 'xlsx'].includes(other));
        expect(looksLike(CONTENT_TYPES[other], file), `${kind} as ${other}`).toBe(expected);
      }
    }
  });

  it('refuses text and empty files for every type', () => {
    for (const type of KNOWLEDGE_CONTENT_TYPES) {
      expect(looksLike(type, Buffer.from('hello, this is plain text'))).toBe(false);
      expect(looksLike(type, Buffer.alloc(0))).toBe(false);
    }
  });
});

describe('extractPlainText', () => {
  it('reads the text of a PDF (deflated content stream)', async () => {
    const text = await extractPlainText(
      CONTENT_TYPES.pdf,
      pdf(['Quarterly statement (ACME)', 'Net 30 days']),
    );
    expect(text).toContain('Quarterly statement (ACME)');
    expect(text).toContain('Net 30 days');
  });

  it('reads the paragraphs of a DOCX', async () => {
    const text = await extractPlainText(
      CONTENT_TYPES.docx,
      docx(['Collections policy', 'Remind after 7 days & <again>']),
    );
    expect(text).toBe('Collections policy\n\nRemind after 7 days & <again>');
  });

  it('reads every row of an XLSX, one line per row under the sheet name', async () => {
    const text = await extractPlainText(
      CONTENT_TYPES.xlsx,
      xlsx(
        [
          ['SKU', 'Rate'],
          ['CONSULT-1', 150],
        ],
        'Rates',
      ),
    );
    expect(text).toBe('# Rates\nSKU\tRate\nCONSULT-1\t150');
  });

  it('gives images no text', async () => {
    expect(await extractPlainText(CONTENT_TYPES.png, sampleFile('png'))).toBeNull();
    expect(await extractPlainText(CONTENT_TYPES.jpeg, sampleFile('jpeg'))).toBeNull();
  });

  it('names the reason when a file is not readable as its type', async () => {
    const broken = Buffer.from('%PDF-1.4\nthis is not a PDF body');
    await expect(extractPlainText(CONTENT_TYPES.pdf, broken)).rejects.toThrow(ExtractionError);
    await expect(extractPlainText(CONTENT_TYPES.pdf, broken)).rejects.toThrow(/PDF could not be read/);
    // A spreadsheet declared as a Word document, and the other way round.
    await expect(extractPlainText(CONTENT_TYPES.docx, sampleFile('xlsx'))).rejects.toThrow(/DOCX file/);
    await expect(extractPlainText(CONTENT_TYPES.xlsx, sampleFile('docx'))).rejects.toThrow(/XLSX file/);
    await expect(extractPlainText(CONTENT_TYPES.xlsx, zip([['a.txt', 'x']]))).rejects.toThrow(
      ExtractionError,
    );
  });

  it('drops NUL characters (PostgreSQL text cannot hold them) and bounds the length', async () => {
    const text = await extractPlainText(
      CONTENT_TYPES.docx,
      docx(['a\u0000b', 'x'.repeat(MAX_EXTRACTED_CHARS)]),
    );
    expect(text!.startsWith('ab\n\n')).toBe(true);
    expect(text!.length).toBe(MAX_EXTRACTED_CHARS);
  });
});

describe('extraction off the event loop', () => {
  afterAll(async () => {
    configureTextExtraction({ timeoutMs: 120_000 });
    await closeTextExtraction();
  });

  /** How many times a `setImmediate` loop turned while `work` ran. */
  /**
   * The share of the time `work` took that this thread's event loop was busy (Node's event-loop
   * utilization): a ratio of the loop's own busy and idle time, so a loaded machine that slows both
   * ways down does not change it the way it changes a count of turns.
   */
  async function loopBusyDuring(work: () => Promise<unknown>): Promise<number> {
    const start = performance.eventLoopUtilization();
    await work();
    return performance.eventLoopUtilization(start).utilization;
  }

  const bigSheet = xlsx(
    Array.from({ length: 40_000 }, (_, i) => [`SKU-${i}`, i, 'consulting, per hour']),
    'Rates',
  );

  it('reads in a thread of the pool, with the same text as reading in this thread', async () => {
    const files = [
      [CONTENT_TYPES.pdf, pdf(['Quarterly statement (ACME)', 'Net 30 days'])],
      [CONTENT_TYPES.docx, docx(['Collections policy', 'Remind after 7 days & <again>'])],
      [CONTENT_TYPES.xlsx, bigSheet],
    ] as const;
    for (const [type, bytes] of files) {
      const pooled = await runExtraction(type, bytes);
      expect(pooled.threadId, type).not.toBe(threadId);
      expect(pooled.threadId, type).toBeGreaterThan(0);
      expect(pooled.text, type).toBe(await extractInThisThread(type, bytes));
    }
  });

  it('keeps the event loop turning while a large spreadsheet is read', async () => {
    // Both ways warmed up above (thread started, libraries loaded). In this thread the parser keeps the
    // loop busy; with the pool the loop only waits for the answer, free for requests.
    const inThisThread = await loopBusyDuring(() => extractInThisThread(CONTENT_TYPES.xlsx, bigSheet));
    const pooled = await loopBusyDuring(() => runExtraction(CONTENT_TYPES.xlsx, bigSheet));
    expect(inThisThread).toBeGreaterThan(0.6);
    expect(pooled).toBeLessThan(0.3);
  });

  it('stops an extraction past the timeout (the file fails), and the next one runs', async () => {
    configureTextExtraction({ timeoutMs: 20 });
    await expect(runExtraction(CONTENT_TYPES.xlsx, bigSheet)).rejects.toThrow(
      new ExtractionError("The file's text could not be read within 0.02 s"),
    );
    configureTextExtraction({ timeoutMs: 120_000 });
    expect((await runExtraction(CONTENT_TYPES.docx, docx(['after']))).text).toBe('after');
  });

  it('refuses a file over the upload limit without reading it', async () => {
    await expect(runExtraction(CONTENT_TYPES.pdf, Buffer.alloc(MAX_KNOWLEDGE_BYTES + 1))).rejects.toThrow(
      /larger than 26214400 bytes/,
    );
  });
});
