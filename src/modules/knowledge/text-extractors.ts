import { ExtractionError, MAX_EXTRACTED_CHARS, type KnowledgeContentType } from './text-extraction.ts';

/**
 * The extractors themselves, loaded only inside an extraction thread (`extraction-worker.ts`): parsing
 * a 25 MB PDF or spreadsheet takes seconds of CPU that would otherwise stall every request of the
 * process. Text comes from maintained libraries that read the formats well: PDF through PDF.js
 * (`unpdf`, its serverless build with no native parts), DOCX through `mammoth`, XLSX through
 * `read-excel-file`. Images have no text (no OCR).
 */

/** NUL cannot be stored in a PostgreSQL text column; runs of blank lines say nothing to search. */
function tidy(text: string): string {
  const clean = text
    .replace(/\u0000/g, '')
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return clean.length > MAX_EXTRACTED_CHARS ? clean.slice(0, MAX_EXTRACTED_CHARS) : clean;
}

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 300);

async function pdfText(bytes: Uint8Array): Promise<string> {
  // Loaded on first use: PDF.js is large, and a thread may never read a PDF.
  const { extractText, getDocumentProxy } = await import('unpdf');
  let document;
  try {
    // A copy: PDF.js takes ownership of (detaches) the buffer it is given.
    document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, isEvalSupported: false });
  } catch (error) {
    const name = (error as { name?: string })?.name;
    if (name === 'PasswordException') throw new ExtractionError('The PDF is password-protected');
    throw new ExtractionError(`The PDF could not be read: ${reason(error)}`);
  }
  try {
    const { text } = await extractText(document, { mergePages: true });
    return text;
  } catch (error) {
    throw new ExtractionError(`The PDF's text could not be read: ${reason(error)}`);
  } finally {
    await document.destroy();
  }
}

async function docxText(bytes: Buffer): Promise<string> {
  const mammoth = (await import('mammoth')).default;
  try {
    return (await mammoth.extractRawText({ buffer: bytes })).value;
  } catch (error) {
    throw new ExtractionError(`The DOCX file could not be read: ${reason(error)}`);
  }
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString().replace('T00:00:00.000Z', '');
  return String(value);
}

async function xlsxText(bytes: Buffer): Promise<string> {
  const readXlsxFile = (await import('read-excel-file/node')).default;
  let sheets;
  try {
    sheets = await readXlsxFile(bytes);
  } catch (error) {
    throw new ExtractionError(`The XLSX file could not be read: ${reason(error)}`);
  }
  // One line per row, cells separated by tabs, each sheet under its name.
  return sheets
    .map(({ sheet, data }) => {
      const rows = data
        .map((row) => row.map(cellText).join('\t').trimEnd())
        .filter((line) => line.length > 0);
      return [`# ${sheet}`, ...rows].join('\n');
    })
    .join('\n\n');
}

/**
 * The plain text of a file of one of the knowledge types, or null for images, read in the calling
 * thread. Throws `ExtractionError` when the file is not a readable file of that type.
 */
export async function extractInThisThread(
  contentType: KnowledgeContentType,
  bytes: Buffer,
): Promise<string | null> {
  switch (contentType) {
    case 'application/pdf':
      return tidy(await pdfText(bytes));
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
      return tidy(await docxText(bytes));
    case 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet':
      return tidy(await xlsxText(bytes));
    case 'image/png':
    case 'image/jpeg':
      return null;
  }
}
