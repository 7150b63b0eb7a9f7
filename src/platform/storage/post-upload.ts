import crypto from 'node:crypto';
import path from 'node:path';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import type { LocalObjectStorage } from './local-storage.ts';
import { ObjectStorageError } from './storage.ts';
import { MAX_POST_OBJECT_BYTES, MAX_POST_PRE_DATA_BYTES, type PostErrorStatus } from './post-policy.ts';

/**
 * Reading one S3 POST Object request for the embedded store, as S3 reads it: the form's fields first
 * (names case-insensitive, at most 20 KB in all), then — at the `file` part, before a byte of it is
 * read — the policy and its signature (`verifyUploadForm`); then the file is streamed to a temporary
 * file in the store, counted as it comes, and reading stops as soon as it passes the policy's
 * content-length-range; only a complete file within the range is moved into place. Fields after the
 * file are ignored (as by S3).
 */

export type PostUploadOutcome =
  | { ok: true; key: string; size: number; etag: string; successStatus: 200 | 201 | 204 }
  | {
      ok: false;
      status: PostErrorStatus | 500;
      code: string;
      message: string;
      /** The body was not read to its end: the answer must close the connection. */
      closeConnection: boolean;
    };

class TooLarge extends Error {}

const failure = (
  status: PostErrorStatus,
  code: string,
  message: string,
  closeConnection = true,
): PostUploadOutcome => ({ ok: false, status, code, message, closeConnection });

const malformed = () =>
  failure(
    400,
    'MalformedPOSTRequest',
    'The body of your POST request is not well-formed multipart/form-data.',
  );
const preDataTooLarge = () =>
  failure(
    400,
    'MaxPostPreDataLengthExceeded',
    'Your POST request fields preceding the upload file were too large.',
  );
const noFile = () =>
  failure(400, 'InvalidArgument', 'POST requires exactly one file upload per request.', false);

export async function receivePostUpload(
  storage: LocalObjectStorage,
  request: FastifyRequest,
  bucket: string,
  now: () => Date = () => new Date(),
): Promise<PostUploadOutcome> {
  if (bucket !== storage.bucket) return failure(404, 'NoSuchBucket', 'The specified bucket does not exist');
  if (!request.isMultipart()) {
    return failure(
      412,
      'PreconditionFailed',
      'Bucket POST must be of the enclosure-type multipart/form-data',
    );
  }
  const fields = new Map<string, string>();
  let preData = 0;
  try {
    const parts = request.parts({
      limits: {
        fieldSize: MAX_POST_PRE_DATA_BYTES,
        fields: 100,
        files: 1,
        parts: 101,
        fileSize: MAX_POST_OBJECT_BYTES + 1,
        headerPairs: 100,
      },
    });
    for await (const part of parts) {
      if (part.type === 'field') {
        const name = part.fieldname.toLowerCase();
        const value = typeof part.value === 'string' ? part.value : String(part.value);
        preData += Buffer.byteLength(name) + Buffer.byteLength(value);
        if (part.valueTruncated || part.fieldnameTruncated || preData > MAX_POST_PRE_DATA_BYTES) {
          return preDataTooLarge();
        }
        if (fields.has(name))
          return failure(400, 'InvalidArgument', `The form field ${name} is given more than once`);
        fields.set(name, value);
        continue;
      }
      if (part.fieldname.toLowerCase() !== 'file') {
        part.file.destroy();
        return failure(400, 'InvalidArgument', 'The file must be sent in the form field named "file".');
      }
      const verdict = storage.verifyUploadForm(fields, now());
      if (!verdict.ok) {
        // Refused before the file is read: stop reading the request altogether.
        part.file.destroy();
        return { ...verdict, closeConnection: true };
      }
      // As S3: `${filename}` in the key becomes the uploaded file's name; the policy was checked against
      // the key as sent. The name is the part's file name without any directory a client put in it.
      const key = verdict.key.replace(
        /\$\{filename\}/g,
        path.posix.basename((part.filename ?? '').replace(/\\/g, '/')),
      );
      if (key === '' || key.length > 1024) {
        part.file.destroy();
        return failure(400, 'InvalidArgument', 'The key, with ${filename} replaced, is empty or too long');
      }
      const tmp = storage.newUploadPath();
      try {
        let size = 0;
        const md5 = crypto.createHash('md5');
        const counter = new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            size += chunk.length;
            // Past the policy's maximum: fail now, which stops reading the request.
            if (size > verdict.maxBytes) return callback(new TooLarge());
            md5.update(chunk);
            callback(null, chunk);
          },
        });
        const out = createWriteStream(tmp, { flags: 'wx', mode: 0o600 });
        try {
          await pipeline(part.file, counter, out);
        } catch (error) {
          // A pipeline that failed early may not have opened the file yet; the open still happens and
          // would recreate the file after it is removed below. Wait until the stream is closed.
          if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
          if (error instanceof TooLarge) {
            return failure(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
          }
          throw error;
        }
        if (size < verdict.minBytes) {
          return failure(
            400,
            'EntityTooSmall',
            'Your proposed upload is smaller than the minimum allowed size',
            false,
          );
        }
        await storage.adoptUpload(key, tmp, { contentType: verdict.contentType, size });
        return {
          ok: true,
          key,
          size,
          etag: md5.digest('hex'),
          successStatus: verdict.successStatus,
        };
      } finally {
        await fs.rm(tmp, { force: true });
      }
    }
    return noFile();
  } catch (error) {
    if (error instanceof ObjectStorageError) throw error;
    const code = (error as { code?: string })?.code;
    if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') return preDataTooLarge();
    if (code === 'FST_FILES_LIMIT') return noFile();
    // File-system failures are ours (500); anything else is the body's fault.
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code) && !request.raw.aborted) throw error;
    return malformed();
  }
}
