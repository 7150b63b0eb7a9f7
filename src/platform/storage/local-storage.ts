import crypto from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import { loadOrCreateCredentials } from './credentials.ts';
import { verifyPresignedRequest, type PresignedRequest, type SigV4Credentials } from './sigv4.ts';
import { verifyPostForm, type PostVerifyResult } from './post-policy.ts';
import {
  assertValidKey,
  EMBEDDED_ENDPOINT_PATH,
  ObjectStorageError,
  presignGet,
  presignPost,
  createS3Client,
  type ObjectHead,
  type ObjectStorage,
  type PresignedPost,
  type PresignGetOptions,
  type PresignPostOptions,
  type PutObjectOptions,
  type StoredObject,
} from './storage.ts';

export const EMBEDDED_REGION = 'us-east-1';

export interface LocalObjectStorageOptions {
  /** `DATA_DIR/objects`: holds `<bucket>/<key>`, `.meta/<bucket>/<key>`, `.tmp/` and `.credentials`. */
  rootDir: string;
  bucket: string;
  /** The service's public address; presigned URLs point at `<its origin>/storage/<bucket>/<key>`. */
  publicBaseUrl: string;
}

interface Sidecar {
  key: string;
  content_type: string;
  size: number;
  stored_at: string;
}

/** What the embedded endpoint answers for a download request, in S3's terms. */
export type DownloadResult =
  | { ok: true; object: StoredObject; contentDisposition: string | undefined; key: string }
  | { ok: false; status: 400 | 403 | 404; code: string; message: string; key?: string };

const isErrno = (error: unknown, ...codes: string[]) =>
  codes.includes((error as NodeJS.ErrnoException)?.code ?? '');

/**
 * The embedded object store (CONTRACT §6). An object is a file `<root>/<bucket>/<key>` (the tree mirrors
 * the bucket, so `aws s3 sync <root>/<bucket> s3://…` moves it to S3) and a JSON sidecar with its content
 * type at `<root>/.meta/<bucket>/<key>`. Writes go to `<root>/.tmp` and are renamed into place, so a
 * reader never sees a partial object. A key that is a prefix "directory" of another key (`a` and `a/b`)
 * cannot exist on a file system; storing it fails with `key_conflict`.
 *
 * Presigned URLs and upload forms are made by the AWS SDK's presigners pointed at the service itself;
 * the service checks them exactly as S3 would (`verifyDownload`: SigV4, expiry; `verifyUploadForm`: the
 * POST policy and its signature), with credentials kept in `<root>/.credentials`.
 */
export class LocalObjectStorage implements ObjectStorage {
  readonly kind = 'embedded' as const;
  readonly region = EMBEDDED_REGION;
  private presignerClient: Promise<S3Client> | undefined;

  private constructor(
    private readonly rootDir: string,
    readonly bucket: string,
    readonly endpoint: string,
    readonly credentials: SigV4Credentials,
  ) {}

  /** The SDK's presigner pointed at the service itself, made on the first presign. */
  private presigner(): Promise<S3Client> {
    this.presignerClient ??= createS3Client({
      endpoint: this.endpoint,
      region: EMBEDDED_REGION,
      credentials: { ...this.credentials }, // a copy: the SDK annotates the object it is given
    });
    return this.presignerClient;
  }

  static async open(options: LocalObjectStorageOptions): Promise<LocalObjectStorage> {
    const rootDir = path.resolve(options.rootDir);
    await fs.mkdir(path.join(rootDir, options.bucket), { recursive: true });
    await fs.mkdir(path.join(rootDir, '.tmp'), { recursive: true });
    const credentials = await loadOrCreateCredentials(rootDir);
    const endpoint = new URL(options.publicBaseUrl).origin + EMBEDDED_ENDPOINT_PATH;
    return new LocalObjectStorage(rootDir, options.bucket, endpoint, credentials);
  }

  private dataPath(key: string): string {
    assertValidKey(key);
    return this.inside(path.join(this.rootDir, this.bucket), key);
  }

  private metaPath(key: string): string {
    return this.inside(path.join(this.rootDir, '.meta', this.bucket), key);
  }

  private inside(base: string, key: string): string {
    const full = path.join(base, ...key.split('/'));
    // assertValidKey already rules out `..`; this is the belt to its braces.
    if (!full.startsWith(base + path.sep)) throw new ObjectStorageError(`Invalid object key: ${key}`);
    return full;
  }

  private tmpPath(): string {
    return path.join(this.rootDir, '.tmp', crypto.randomUUID());
  }

  /** Renames `from` to `to`, creating parent directories (again, if a delete just removed them). */
  private async moveInto(from: string, to: string, key: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await fs.mkdir(path.dirname(to), { recursive: true });
        await fs.rename(from, to);
        return;
      } catch (error) {
        if (isErrno(error, 'ENOENT') && attempt < 3) continue;
        if (isErrno(error, 'EEXIST', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY')) {
          throw new ObjectStorageError(
            `Object key ${JSON.stringify(key)} conflicts with an existing key (one is a prefix of the other)`,
            'key_conflict',
          );
        }
        throw error;
      }
    }
  }

  async putObject(
    key: string,
    body: Buffer | Readable,
    options: PutObjectOptions,
  ): Promise<{ size: number }> {
    this.dataPath(key); // validates the key before anything is written
    const tmp = this.tmpPath();
    try {
      let size = 0;
      if (Buffer.isBuffer(body)) {
        await fs.writeFile(tmp, body, { flag: 'wx', mode: 0o600 });
        size = body.length;
      } else {
        const counter = new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            size += chunk.length;
            callback(null, chunk);
          },
        });
        await pipeline(body, counter, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
      }
      if (options.contentLength !== undefined && options.contentLength !== size) {
        throw new ObjectStorageError(
          `Object body was ${size} bytes, not the announced ${options.contentLength}`,
          'size_mismatch',
        );
      }
      await this.adoptUpload(key, tmp, { contentType: options.contentType, size });
      return { size };
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  /** A fresh path in the store's own temporary directory (same file system: a rename moves it in). */
  newUploadPath(): string {
    return this.tmpPath();
  }

  /**
   * Makes a complete file written at `newUploadPath()` the object `key` (a rename, no copy), with its
   * sidecar. On failure the file is left where it was, for the caller to remove.
   */
  async adoptUpload(
    key: string,
    file: string,
    options: { contentType: string; size: number },
  ): Promise<void> {
    const target = this.dataPath(key);
    const tmpMeta = `${this.tmpPath()}.json`;
    try {
      const sidecar: Sidecar = {
        key,
        content_type: options.contentType,
        size: options.size,
        stored_at: new Date().toISOString(),
      };
      await fs.writeFile(tmpMeta, JSON.stringify(sidecar), { flag: 'wx', mode: 0o600 });
      await this.moveInto(file, target, key);
      try {
        await this.moveInto(tmpMeta, this.metaPath(key), key);
      } catch (error) {
        await fs.rm(target, { force: true });
        throw error;
      }
    } finally {
      await fs.rm(tmpMeta, { force: true });
    }
  }

  private async readSidecar(key: string): Promise<Sidecar | null> {
    try {
      return JSON.parse(await fs.readFile(this.metaPath(key), 'utf8')) as Sidecar;
    } catch (error) {
      if (isErrno(error, 'ENOENT', 'ENOTDIR', 'EISDIR')) return null;
      throw error;
    }
  }

  async headObject(key: string): Promise<ObjectHead | null> {
    const file = this.dataPath(key);
    const sidecar = await this.readSidecar(key);
    if (!sidecar) return null;
    try {
      const stat = await fs.stat(file);
      if (!stat.isFile()) return null;
      return { size: stat.size, contentType: sidecar.content_type };
    } catch (error) {
      if (isErrno(error, 'ENOENT', 'ENOTDIR')) return null;
      throw error;
    }
  }

  /** The object, or with `range` only bytes `start`…`end` (inclusive) of it (HTTP Range downloads). */
  async getObject(key: string, range?: { start: number; end: number }): Promise<StoredObject | null> {
    const file = this.dataPath(key);
    const sidecar = await this.readSidecar(key);
    if (!sidecar) return null;
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, 'r');
    } catch (error) {
      if (isErrno(error, 'ENOENT', 'ENOTDIR', 'EISDIR')) return null;
      throw error;
    }
    try {
      // Size and bytes come from the same open file, even if the key is replaced meanwhile.
      const stat = await handle.stat();
      if (!stat.isFile()) {
        await handle.close();
        return null;
      }
      const body = handle.createReadStream({ autoClose: true, ...(range ?? {}) });
      return { body, size: stat.size, contentType: sidecar.content_type };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async deleteObject(key: string): Promise<void> {
    const file = this.dataPath(key);
    const meta = this.metaPath(key);
    for (const target of [meta, file]) {
      try {
        await fs.unlink(target);
      } catch (error) {
        if (!isErrno(error, 'ENOENT', 'ENOTDIR', 'EISDIR')) throw error;
      }
    }
    await this.pruneEmptyParents(path.dirname(file), path.join(this.rootDir, this.bucket));
    await this.pruneEmptyParents(path.dirname(meta), path.join(this.rootDir, '.meta', this.bucket));
  }

  /** Removes now-empty directories up to (not including) the bucket's root, as S3 has no directories. */
  private async pruneEmptyParents(dir: string, stopAt: string): Promise<void> {
    for (let current = dir; current.startsWith(stopAt + path.sep); current = path.dirname(current)) {
      try {
        await fs.rmdir(current);
      } catch {
        return; // not empty (or already gone): the rest of the way up is not empty either
      }
    }
  }

  async presignedGetUrl(key: string, options: PresignGetOptions): Promise<string> {
    return presignGet(await this.presigner(), this.bucket, key, options);
  }

  async presignedPost(key: string, options: PresignPostOptions): Promise<PresignedPost> {
    return presignPost(await this.presigner(), this.bucket, key, options);
  }

  /**
   * The embedded S3 endpoint's POST, before the file is read: the form's fields (names lower-cased)
   * against the policy and its SigV4 signature, as S3 checks them (`post-policy.ts`).
   */
  verifyUploadForm(fields: ReadonlyMap<string, string>, now = new Date()): PostVerifyResult {
    return verifyPostForm(fields, {
      credentials: this.credentials,
      region: this.region,
      bucket: this.bucket,
      now,
    });
  }

  /**
   * The embedded S3 endpoint's GET: verifies the presigned request (SigV4 over method, path, query and
   * the Host header; expiry), then opens the object. `request.url` is the target as received.
   */
  async verifyDownload(request: PresignedRequest, now = new Date()): Promise<DownloadResult> {
    const verified = verifyPresignedRequest(request, {
      credentials: this.credentials,
      region: this.region,
      now,
    });
    if (!verified.ok) return verified;
    const prefix = `${EMBEDDED_ENDPOINT_PATH}/${this.bucket}/`;
    if (!verified.rawPath.startsWith(prefix)) {
      return { ok: false, status: 404, code: 'NoSuchBucket', message: 'The specified bucket does not exist' };
    }
    let key: string;
    try {
      key = decodeURIComponent(verified.rawPath.slice(prefix.length));
      assertValidKey(key);
    } catch {
      return { ok: false, status: 400, code: 'InvalidArgument', message: 'The object key is not valid' };
    }
    const object = await this.getObject(key);
    if (!object) {
      return { ok: false, status: 404, code: 'NoSuchKey', message: 'The specified key does not exist.', key };
    }
    return {
      ok: true,
      object,
      key,
      contentDisposition: verified.params.get('response-content-disposition'),
    };
  }

  async close(): Promise<void> {
    if (this.presignerClient) (await this.presignerClient).destroy();
  }
}
