import crypto from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { ObjectStorageConfig } from '../../config.ts';
import type { Metrics } from '../observability/metrics.ts';
import { observeOutbound } from '../observability/outbound-calls.ts';
import {
  assertValidKey,
  presignGet,
  presignPost,
  S3_CLIENT_DEFAULTS,
  type ObjectHead,
  type ObjectStorage,
  type PresignedPost,
  type PresignGetOptions,
  type PresignPostOptions,
  type PutObjectOptions,
  type StoredObject,
} from './storage.ts';

export type S3Settings = Extract<ObjectStorageConfig, { kind: 's3' }>;

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

/**
 * Any S3 API (AWS S3, MinIO, Ceph RGW, R2…) through the AWS SDK: path-style addresses at `S3_ENDPOINT`
 * (AWS's own endpoint when unset), one bucket that must already exist. Presigned URLs are signed by the
 * SDK and checked by the S3 service itself, and so are presigned POST uploads.
 */
export class S3ObjectStorage implements ObjectStorage {
  readonly kind = 's3' as const;
  readonly bucket: string;
  readonly region: string;
  readonly client: S3Client;

  constructor(settings: S3Settings, metrics?: Metrics) {
    this.bucket = settings.bucket;
    this.region = settings.region;
    this.client = new S3Client({
      ...S3_CLIENT_DEFAULTS,
      region: settings.region,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      ...(settings.accessKeyId && settings.secretAccessKey
        ? {
            credentials: {
              accessKeyId: settings.accessKeyId,
              secretAccessKey: settings.secretAccessKey,
            },
          }
        : {}),
    });
    // Around the deserializer (so an error answer counts as one), inside the retries (so each HTTP
    // attempt counts), and past the point where the presigner returns a signed URL (never counted).
    this.client.middlewareStack.add(
      (next, context) => (args) =>
        observeOutbound(metrics, 's3', (context.commandName ?? 'unknown').replace(/Command$/, ''), () =>
          next(args),
        ),
      { step: 'deserialize', priority: 'high', name: 'remitObserveS3Calls' },
    );
  }

  async putObject(
    key: string,
    body: Buffer | Readable,
    options: PutObjectOptions,
  ): Promise<{ size: number }> {
    assertValidKey(key);
    const put = async (Body: Buffer | Readable, ContentLength: number) => {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body,
          ContentLength,
          ContentType: options.contentType,
        }),
      );
      return { size: ContentLength };
    };
    if (Buffer.isBuffer(body)) return put(body, body.length);
    if (options.contentLength !== undefined) return put(body, options.contentLength);
    // S3's PutObject needs the length up front: spool a stream of unknown length to a temporary file.
    const tmp = path.join(os.tmpdir(), `remit-s3-put-${crypto.randomUUID()}`);
    try {
      let size = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          size += chunk.length;
          callback(null, chunk);
        },
      });
      await pipeline(body, counter, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
      return await put(createReadStream(tmp), size);
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  async headObject(key: string): Promise<ObjectHead | null> {
    assertValidKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return {
        size: head.ContentLength ?? 0,
        contentType: head.ContentType ?? 'application/octet-stream',
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async getObject(key: string): Promise<StoredObject | null> {
    assertValidKey(key);
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!(got.Body instanceof Readable)) throw new Error('S3 GetObject returned no Node.js stream');
      return {
        body: got.Body,
        size: got.ContentLength ?? 0,
        contentType: got.ContentType ?? 'application/octet-stream',
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async deleteObject(key: string): Promise<void> {
    assertValidKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async presignedGetUrl(key: string, options: PresignGetOptions): Promise<string> {
    return presignGet(this.client, this.bucket, key, options);
  }

  /** Signed by the SDK with the client's credentials (a session token becomes X-Amz-Security-Token). */
  async presignedPost(key: string, options: PresignPostOptions): Promise<PresignedPost> {
    return presignPost(this.client, this.bucket, key, options);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
