import crypto from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { assertUrlParts } from '../http/validation.ts';
import { AppError } from '../http/errors.ts';

/**
 * Multipart uploads for routes that store a file (invoice attachments, documents): the whole form is
 * read before the handler runs, the file spooled to a temporary file with its size and SHA-256, so that
 * (1) fields may come in any order, (2) the file size limit answers 413 before anything is stored, and
 * (3) the idempotency check can compare a retry with the first request by content: the route's
 * `request.body` becomes the form's text fields plus, for the file, a digest of its name, type and bytes
 * (a raw-body hash would differ on every retry, as clients pick a new multipart boundary each time).
 */

export interface SpooledFile {
  fieldname: string;
  /** The client's file name without any directory part; `file` when it sent none. */
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  /** SHA-256 over name, type and content: what the idempotency check compares. */
  digest: string;
  /** The temporary file holding the bytes; removed by `discardSpooledFiles`. */
  path: string;
}

export interface MultipartForm {
  files: SpooledFile[];
  fields: Map<string, string>;
}

export interface ReadFormOptions {
  maxFileBytes: number;
  maxFiles?: number;
  maxFields?: number;
  maxFieldBytes?: number;
  spoolDir?: string;
}

const MB = 1024 * 1024;

/** The part's media type, lower-cased, with a charset kept; anything malformed is octet-stream. */
export function normalizeContentType(mimetype: string | undefined): string {
  const [essence = '', ...params] = (mimetype ?? '').split(';').map((s) => s.trim());
  const type = essence.toLowerCase();
  if (!/^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(type)) {
    return 'application/octet-stream';
  }
  const charset = params.map((p) => /^charset="?([A-Za-z0-9._-]{1,40})"?$/i.exec(p)?.[1]).find(Boolean);
  return charset ? `${type}; charset=${charset.toLowerCase()}` : type;
}

/**
 * The file name a client sent, as shown back to users: last path component, no control characters.
 * Browsers (and fetch's FormData) write `"` in a multipart file name as `%22` (HTML's form encoding).
 */
export function displayFilename(filename: string | undefined): string {
  const base = (filename ?? '').replace(/%22/g, '"').split(/[\\/]/).pop() ?? '';
  const clean = base
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .normalize('NFC');
  return Array.from(clean).slice(0, 255).join('') || 'file';
}

export async function discardSpooledFiles(files: readonly SpooledFile[] | null | undefined): Promise<void> {
  await Promise.all((files ?? []).map((f) => fs.rm(f.path, { force: true })));
}

const isErrno = (error: unknown) => /^E[A-Z]+$/.test(String((error as { code?: unknown })?.code ?? ''));

/** Multipart and busboy failures → the one error body; file-system errors stay 500s. */
function toClientError(error: unknown, options: ReadFormOptions): unknown {
  if (error instanceof AppError || isErrno(error)) return error;
  const code = (error as { code?: string })?.code;
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return fileTooLarge(options.maxFileBytes);
    case 'FST_FILES_LIMIT':
      return new AppError('validation_failed', 'Send exactly one file', [
        { field: 'file', message: `at most ${options.maxFiles ?? 1} file may be sent` },
      ]);
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new AppError('payload_too_large', 'The form has too many fields');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError('unsupported_media_type', 'Send the upload as multipart/form-data');
    default:
      return new AppError('bad_request', 'The multipart/form-data body is malformed or incomplete');
  }
}

const fileTooLarge = (max: number) =>
  new AppError(
    'payload_too_large',
    `The file is larger than ${max % MB === 0 ? `${max / MB} MB` : `${max} bytes`} (${max} bytes)`,
  );

/**
 * Reads every part of a multipart/form-data request: files are spooled to temporary files (at most
 * `maxFileBytes` each, else 413), text fields collected (a field given twice → 422). A request that is
 * not multipart → 415. On any failure the spooled files are removed before the error is thrown.
 */
export async function readMultipartForm(
  request: FastifyRequest,
  options: ReadFormOptions,
): Promise<MultipartForm> {
  if (!request.isMultipart()) {
    throw new AppError('unsupported_media_type', 'Send the upload as multipart/form-data');
  }
  const spoolDir = options.spoolDir ?? os.tmpdir();
  const form: MultipartForm = { files: [], fields: new Map() };
  try {
    const parts = request.parts({
      limits: {
        fileSize: options.maxFileBytes,
        files: options.maxFiles ?? 1,
        fields: options.maxFields ?? 10,
        fieldSize: options.maxFieldBytes ?? 16 * 1024,
        parts: (options.maxFiles ?? 1) + (options.maxFields ?? 10),
        headerPairs: 100,
      },
    });
    for await (const part of parts) {
      if (part.type === 'field') {
        if (part.valueTruncated || part.fieldnameTruncated) {
          throw new AppError('validation_failed', `Form field ${part.fieldname} is too long`, [
            { field: part.fieldname, message: 'is too long' },
          ]);
        }
        if (form.fields.has(part.fieldname)) {
          throw new AppError('validation_failed', `Form field ${part.fieldname} is given more than once`, [
            { field: part.fieldname, message: 'is given more than once' },
          ]);
        }
        form.fields.set(part.fieldname, typeof part.value === 'string' ? part.value : String(part.value));
        continue;
      }
      const spoolPath = path.join(spoolDir, `remit-upload-${crypto.randomUUID()}`);
      const filename = displayFilename(part.filename);
      const contentType = normalizeContentType(part.mimetype);
      const hash = crypto.createHash('sha256');
      let size = 0;
      // Registered before spooling, so a failure half-way still removes the temporary file.
      const spooled: SpooledFile = {
        fieldname: part.fieldname,
        filename,
        contentType,
        size: 0,
        sha256: '',
        digest: '',
        path: spoolPath,
      };
      form.files.push(spooled);
      const measure = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          size += chunk.length;
          hash.update(chunk);
          callback(null, chunk);
        },
      });
      await pipeline(part.file, measure, createWriteStream(spoolPath, { flags: 'wx', mode: 0o600 }));
      if (part.file.truncated) throw fileTooLarge(options.maxFileBytes);
      spooled.size = size;
      spooled.sha256 = hash.digest('hex');
      spooled.digest = crypto
        .createHash('sha256')
        .update(`${filename}\u0000${contentType}\u0000${spooled.sha256}`)
        .digest('hex');
    }
    return form;
  } catch (error) {
    await discardSpooledFiles(form.files);
    throw toClientError(error, options);
  }
}

/** Deletes the request's spooled files (after the response, or when the client went away). */
export async function releaseSpooledFiles(request: FastifyRequest): Promise<void> {
  const files = request.spooledFiles;
  request.spooledFiles = null;
  await discardSpooledFiles(files);
}

/**
 * The upload routes' preValidation step: reads the whole form, keeps the spooled files on the request
 * and makes `request.body` the text fields plus each file part's digest (what schema validation and the
 * idempotency check see). `file` sent as a text field is a 422.
 */
export async function readUploadFormAsBody(
  request: FastifyRequest,
  options: ReadFormOptions,
  adjust: (body: Record<string, unknown>) => void = () => undefined,
): Promise<void> {
  assertUrlParts(request);
  const form = await readMultipartForm(request, options);
  request.spooledFiles = form.files;
  if (form.fields.has('file')) {
    throw new AppError('validation_failed', 'file must be a file part (with a filename), not a text field', [
      { field: 'file', message: 'must be a file part, not a text field' },
    ]);
  }
  const body: Record<string, unknown> = Object.fromEntries(form.fields);
  adjust(body);
  for (const file of form.files) body[file.fieldname] = file.digest;
  request.body = body;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Files of a multipart upload spooled to disk; removed once the response is sent. */
    spooledFiles: SpooledFile[] | null;
  }
}
