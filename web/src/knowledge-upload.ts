/**
 * Knowledge files in the browser (docs/knowledge.md): which files the API takes, and the upload of one
 * straight to object storage with the presigned POST form. The bytes never pass through the API.
 */

export type KnowledgeContentType =
  | 'application/pdf'
  | 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'
  | 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
  | 'image/png'
  | 'image/jpeg';

/** The API's five types (docs/knowledge.md#supported-types-and-limits), by file name extension. */
export const KNOWLEDGE_TYPES: Record<string, KnowledgeContentType> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
};

/** What the file picker offers: the extensions and the types, so every platform's picker filters. */
export const ACCEPT = [
  ...Object.keys(KNOWLEDGE_TYPES).map((ext) => `.${ext}`),
  ...new Set(Object.values(KNOWLEDGE_TYPES)),
].join(',');

/** The upload policy's limit: 25 MB (26,214,400 bytes). */
export const MAX_BYTES = 25 * 1024 * 1024;

/** Short names of the types, for the list. */
export const TYPE_LABELS: Record<string, string> = {
  'application/pdf': 'PDF',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'Word',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'Excel',
  'image/png': 'PNG image',
  'image/jpeg': 'JPEG image',
};

/**
 * The content type to presign for a file: the browser's own type when it is one of the five, else the
 * one its extension names (browsers leave `type` empty for types the system does not know, and some
 * report spreadsheets under older names). Undefined when the API would refuse it.
 */
export function contentTypeOf(file: { name: string; type: string }): KnowledgeContentType | undefined {
  const supported = new Set<string>(Object.values(KNOWLEDGE_TYPES));
  if (supported.has(file.type)) return file.type as KnowledgeContentType;
  const ext = /\.([a-z0-9]+)$/i.exec(file.name)?.[1]?.toLowerCase();
  return ext ? KNOWLEDGE_TYPES[ext] : undefined;
}

/** Why a file cannot be uploaded, said before anything is sent; undefined when it can. */
export function fileProblem(file: { name: string; type: string; size: number }): string | undefined {
  if (!contentTypeOf(file))
    return `${file.name} is not a PDF, Word (.docx), Excel (.xlsx), PNG or JPEG file.`;
  if (file.size === 0) return `${file.name} is empty.`;
  if (file.size > MAX_BYTES) return `${file.name} is ${formatBytes(file.size)}; the limit is 25 MB.`;
  return undefined;
}

/** `512 B`, `48.2 kB`, `1.3 MB` in the person's locale (decimal units, as the 25 MB limit is written). */
export function formatBytes(bytes: number, locale?: string): string {
  if (bytes < 1_000) return `${new Intl.NumberFormat(locale).format(bytes)} B`;
  const [unit, size] =
    bytes >= 1_000_000 ? (['megabyte', 1_000_000] as const) : (['kilobyte', 1_000] as const);
  return new Intl.NumberFormat(locale, {
    style: 'unit',
    unit,
    unitDisplay: 'short',
    maximumFractionDigits: 1,
  }).format(bytes / size);
}

/**
 * The message of an S3 error document (`<Error><Code>AccessDenied</Code><Message>Policy expired.</Message>`),
 * which the storage answers instead of the API's JSON body.
 */
export function storageProblem(status: number, body: string): string {
  const field = (name: string) =>
    new RegExp(`<${name}>([^<]*)</${name}>`)
      .exec(body)?.[1]
      ?.replace(/&quot;/g, '"')
      .replace(/&amp;/g, '&');
  const code = field('Code');
  const message = field('Message');
  if (code === 'EntityTooLarge') return 'The file is over the 25 MB limit.';
  if (message?.includes('Policy expired'))
    return 'The upload took longer than its 15 minutes. Upload it again.';
  if (message) return `The storage refused the file: ${message}`;
  return `The storage answered ${status}. Try again.`;
}

export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
}

/**
 * POSTs the form (every presigned field, then the file last as `file`) with XMLHttpRequest, which,
 * unlike fetch, reports upload progress. Resolves on 2xx; rejects with a sentence otherwise.
 */
export function uploadToStorage(
  post: PresignedPost,
  file: Blob,
  onProgress: (loaded: number, total: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(post.fields)) form.append(name, value);
    form.append('file', file);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', post.url);
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve();
      else reject(new Error(storageProblem(xhr.status, xhr.responseText)));
    });
    xhr.addEventListener('error', () =>
      reject(new Error('The file could not reach the storage. Check your connection and try again.')),
    );
    xhr.addEventListener('abort', () => reject(new Error('The upload was canceled.')));
    signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(form);
  });
}
