import path from 'node:path';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';

/**
 * Object storage (CONTRACT §6): one bucket, addressed by key. Two implementations answer the same
 * interface: the embedded default (`LocalObjectStorage`, files under `DATA_DIR/objects`, served by the
 * service's own S3-compatible endpoint) and any S3 API (`S3ObjectStorage`). Both hand out real AWS
 * Signature V4 presigned URLs made by the AWS SDK's presigner, so a client cannot tell them apart.
 */
export interface ObjectStorage {
  readonly kind: 'embedded' | 's3';
  readonly bucket: string;
  /**
   * Stores `body` under `key`, replacing any object there. A stream of unknown length is spooled to a
   * temporary file first when the backend needs the length up front (S3); give `contentLength` when it
   * is known. Rejects (and stores nothing) when the stream errors.
   */
  putObject(key: string, body: Buffer | Readable, options: PutObjectOptions): Promise<{ size: number }>;
  /** Size and content type, or null when there is no such object. */
  headObject(key: string): Promise<ObjectHead | null>;
  /** The object's bytes as a stream with its size and content type, or null when there is none. */
  getObject(key: string): Promise<StoredObject | null>;
  /** Removes the object; removing a missing object is not an error (as in S3). */
  deleteObject(key: string): Promise<void>;
  /** A time-limited SigV4 query-signed GET address of the object (it need not exist yet). */
  presignedGetUrl(key: string, options: PresignGetOptions): Promise<string>;
  /**
   * A browser-style upload form (S3 POST Object with a SigV4 POST policy): the client POSTs
   * multipart/form-data to `url` with every member of `fields`, then the file last as `file`. The
   * policy pins the key, the content type and the size range, and expires after `expiresInSeconds`.
   */
  presignedPost(key: string, options: PresignPostOptions): Promise<PresignedPost>;
  /** Releases sockets (S3 client); the embedded store holds none. */
  close(): Promise<void>;
}

export interface PutObjectOptions {
  contentType: string;
  contentLength?: number;
}

export interface ObjectHead {
  size: number;
  contentType: string;
}

export interface StoredObject extends ObjectHead {
  body: Readable;
}

export interface PresignGetOptions {
  /** 1 to 604800 (7 days, the S3 maximum). */
  expiresInSeconds: number;
  /** Served as `Content-Disposition: attachment; filename=…` (signed into the URL). */
  filename?: string;
  /** The instant the signature is made at (default now); the URL expires `expiresInSeconds` later. */
  signingDate?: Date;
}

export interface PresignPostOptions {
  /** The only `Content-Type` the upload may declare (stored as the object's type). */
  contentType: string;
  /** content-length-range: the file's size in bytes, inclusive. `minBytes` defaults to 1. */
  maxBytes: number;
  minBytes?: number;
  /** 1 to 604800 (7 days). */
  expiresInSeconds: number;
}

export interface PresignedPost {
  /** Where the form is POSTed: `<endpoint>/<bucket>` (path style). */
  url: string;
  /**
   * Every form field to send before the file: `key`, `Content-Type`, `bucket`, `X-Amz-Algorithm`,
   * `X-Amz-Credential`, `X-Amz-Date`, `Policy`, `X-Amz-Signature`, and `X-Amz-Security-Token` when the
   * credentials are temporary. Clients iterate it; the set is not fixed.
   */
  fields: Record<string, string>;
}

export class ObjectStorageError extends Error {
  constructor(
    message: string,
    readonly code: 'invalid_key' | 'key_conflict' | 'size_mismatch' = 'invalid_key',
  ) {
    super(message);
    this.name = 'ObjectStorageError';
  }
}

export const MAX_PRESIGN_EXPIRES_S = 604_800;
/** Where the embedded store's S3-compatible endpoint lives on the service (`/storage/<bucket>/<key>`). */
export const EMBEDDED_ENDPOINT_PATH = '/storage';

/**
 * Keys are what S3 allows (1 to 1024 bytes of UTF-8), narrowed so that every key is also a safe relative
 * file path for the embedded store: `/`-separated segments, none empty, `.` or `..`, no backslash and no
 * control characters.
 */
export function assertValidKey(key: string): void {
  const bytes = Buffer.byteLength(key, 'utf8');
  const bad = (why: string) => new ObjectStorageError(`Invalid object key (${why}): ${JSON.stringify(key)}`);
  if (bytes === 0 || bytes > 1024) throw bad('must be 1 to 1024 bytes');
  if (/[\u0000-\u001f\u007f\\]/.test(key)) throw bad('control character or backslash');
  if (Buffer.from(key, 'utf8').toString('utf8') !== key) throw bad('lone surrogate');
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') throw bad('empty, "." or ".." segment');
  }
}

/**
 * A file name made safe for a storage key and a `Content-Disposition` header: the last path component,
 * letters, digits, `.`, `-` and `_` only (others become `_`), no leading dot, at most 120 characters with
 * the extension kept.
 */
export function sanitizeFilename(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  let safe = base
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^[._]+/, '');
  if (safe.length > 120) {
    const ext = path.extname(safe).slice(0, 20);
    safe = safe.slice(0, 120 - ext.length) + ext;
  }
  return safe || 'file';
}

/** `attachment; filename="<ascii>"; filename*=UTF-8''<utf-8>` (RFC 6266), from any file name. */
export function contentDisposition(filename: string): string {
  const name = filename.split(/[\\/]/).pop() || 'file';
  const ascii = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/g, '_')
    .replace(/["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** The GET presigner both implementations share: the AWS SDK's own, against their client's endpoint. */
export async function presignGet(
  client: S3Client,
  bucket: string,
  key: string,
  options: PresignGetOptions,
): Promise<string> {
  assertValidKey(key);
  const expiresIn = options.expiresInSeconds;
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_PRESIGN_EXPIRES_S) {
    throw new RangeError(`expiresInSeconds must be 1 to ${MAX_PRESIGN_EXPIRES_S}`);
  }
  // The AWS SDK loads on the first presign, not at start (docs/performance.md#start-and-footprint).
  const [{ GetObjectCommand }, { getSignedUrl }] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/s3-request-presigner'),
  ]);
  const command = new GetObjectCommand({
    Bucket: bucket,
    Key: key,
    ...(options.filename !== undefined
      ? { ResponseContentDisposition: contentDisposition(options.filename) }
      : {}),
  });
  return getSignedUrl(client, command, {
    expiresIn,
    ...(options.signingDate ? { signingDate: options.signingDate } : {}),
  });
}

/**
 * The POST presigner both implementations share: the AWS SDK's `createPresignedPost` against their
 * client's endpoint. Besides the conditions the SDK adds for each field (bucket, key, algorithm,
 * credential, date, security token, and `Content-Type` as an exact match), the policy carries the
 * size range.
 */
export async function presignPost(
  client: S3Client,
  bucket: string,
  key: string,
  options: PresignPostOptions,
): Promise<PresignedPost> {
  assertValidKey(key);
  const expiresIn = options.expiresInSeconds;
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_PRESIGN_EXPIRES_S) {
    throw new RangeError(`expiresInSeconds must be 1 to ${MAX_PRESIGN_EXPIRES_S}`);
  }
  const minBytes = options.minBytes ?? 1;
  if (!Number.isSafeInteger(minBytes) || !Number.isSafeInteger(options.maxBytes) || minBytes < 0) {
    throw new RangeError('minBytes and maxBytes must be whole numbers');
  }
  if (options.maxBytes < minBytes) throw new RangeError('maxBytes must be at least minBytes');
  const { createPresignedPost } = await import('@aws-sdk/s3-presigned-post');
  const { url, fields } = await createPresignedPost(client, {
    Bucket: bucket,
    Key: key,
    Fields: { 'Content-Type': options.contentType },
    Conditions: [['content-length-range', minBytes, options.maxBytes]],
    Expires: expiresIn,
  });
  return { url, fields };
}

/**
 * Client settings both implementations use: path-style addresses (`<endpoint>/<bucket>/<key>`, what
 * MinIO and the embedded endpoint serve) and checksums only where S3 requires them, so presigned URLs
 * carry no `x-amz-checksum-mode`.
 */
export const S3_CLIENT_DEFAULTS = {
  forcePathStyle: true,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
} as const;

/** An S3 client for presigning, with the SDK loaded on first use. */
export async function createS3Client(settings: {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}): Promise<S3Client> {
  const { S3Client } = await import('@aws-sdk/client-s3');
  return new S3Client({ ...S3_CLIENT_DEFAULTS, ...settings });
}
