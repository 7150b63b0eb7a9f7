/**
 * The knowledge document types (interface 2.3), how to recognise each from its first bytes, and the
 * plain text of each, for search. Text comes from maintained libraries that read the formats well:
 * PDF through PDF.js (`unpdf`, its serverless build with no native parts), DOCX through `mammoth`,
 * XLSX through `read-excel-file`. Images have no text (no OCR).
 */

export const KNOWLEDGE_CONTENT_TYPES = [
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'image/png',
  'image/jpeg',
] as const;
export type KnowledgeContentType = (typeof KNOWLEDGE_CONTENT_TYPES)[number];

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

async function pdfText(bytes: Buffer): Promise<string> {
  // Loaded on first use: PDF.js is large, and most processes never read a PDF.
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
 * The plain text of a file of one of the knowledge types, or null for images (they carry none).
 * Throws `ExtractionError` when the file is not a readable file of that type.
 */
export async function extractPlainText(
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
