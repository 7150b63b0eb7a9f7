import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalObjectStorage } from '../../src/platform/storage/local-storage.ts';
import {
  amzDateOf,
  listeningTestApp,
  parseS3Error,
  signPolicy,
  uploadWithForm,
  type ListeningTestApp,
} from '../helpers/presigned-post.ts';

/**
 * Edges of the embedded store's POST endpoint: a refused upload still gets S3's status and XML while the
 * client is still sending (real HTTP uploads of 2 MB over 127.0.0.1 written in chunks with node:http,
 * repeated: a client must never see only EPIPE or a reset), and `${filename}` in the key.
 */
let t: ListeningTestApp;
let storage: LocalObjectStorage;

beforeAll(async () => {
  t = await listeningTestApp();
  storage = t.deps.objectStorage as LocalObjectStorage;
});
afterAll(async () => t?.close());

/** A multipart POST written in 64 KiB chunks with node:http, as a plain client streams a file. */
async function upload(fields: Record<string, string>, size: number, url: string) {
  const boundary = `----remit${Math.random().toString(16).slice(2)}`;
  const head = Object.entries(fields)
    .map(
      ([name, value]) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
    )
    .join('');
  const body = Buffer.concat([
    Buffer.from(
      `${head}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\n` +
        'Content-Type: application/pdf\r\n\r\n',
    ),
    Buffer.alloc(size, 7),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return new Promise<{ status: number; error: ReturnType<typeof parseS3Error> }>((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': body.length,
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, error: parseS3Error(text) }));
      },
    );
    request.on('error', reject);
    const write = (offset: number) => {
      while (offset < body.length) {
        const chunk = body.subarray(offset, offset + 64 * 1024);
        offset += chunk.length;
        if (!request.write(chunk)) {
          request.once('drain', () => write(offset));
          return;
        }
      }
      request.end();
    };
    write(0);
  });
}

describe('refused uploads of 2 MB answer with S3 errors, every time', () => {
  it('a bad signature (refused before the file is read): 20 of 20 get 403 SignatureDoesNotMatch', async () => {
    const post = await storage.presignedPost('refusal/a.pdf', {
      contentType: 'application/pdf',
      minBytes: 1,
      maxBytes: 25 * 1024 * 1024,
      expiresInSeconds: 900,
    });
    const fields = { ...post.fields, 'X-Amz-Signature': '0'.repeat(64) };
    for (let i = 0; i < 20; i++) {
      const res = await upload(fields, 2 * 1024 * 1024, post.url);
      expect(res.status, `attempt ${i + 1}`).toBe(403);
      expect(res.error?.code).toBe('SignatureDoesNotMatch');
    }
  });

  it('too large for the policy (refused while streaming): 20 of 20 get 400 EntityTooLarge', async () => {
    const post = await storage.presignedPost('refusal/b.pdf', {
      contentType: 'application/pdf',
      minBytes: 1,
      maxBytes: 1024 * 1024,
      expiresInSeconds: 900,
    });
    for (let i = 0; i < 20; i++) {
      const res = await upload(post.fields, 2 * 1024 * 1024, post.url);
      expect(res.status, `attempt ${i + 1}`).toBe(400);
      expect(res.error?.code).toBe('EntityTooLarge');
    }
    expect(await storage.headObject('refusal/b.pdf')).toBeNull();
  });
});

describe('${filename} in the key, as S3 substitutes it', () => {
  it('a presigned key with ${filename} stores the object under the uploaded file name', async () => {
    const post = await storage.presignedPost('incoming/${filename}', {
      contentType: 'application/pdf',
      maxBytes: 1024,
      expiresInSeconds: 900,
    });
    const res = await uploadWithForm(post, {
      content: Buffer.from('%PDF-1.4'),
      type: 'application/pdf',
      filename: 'Q3 report.pdf',
    });
    expect(res.status, res.body).toBe(204);
    expect(res.headers.get('location')).toContain('/incoming/Q3%20report.pdf');
    expect(await storage.headObject('incoming/Q3 report.pdf')).toEqual({
      size: 8,
      contentType: 'application/pdf',
    });
    expect(await storage.headObject('incoming/${filename}')).toBeNull();
  });

  it('a starts-with policy is checked against the key as sent; a directory in the file name is dropped', async () => {
    const date = new Date();
    const amzDate = amzDateOf(date);
    const credential = `${storage.credentials.accessKeyId}/${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`;
    const { policy, signature } = signPolicy(
      {
        expiration: new Date(date.getTime() + 600_000).toISOString(),
        conditions: [
          { bucket: 'remit' },
          ['starts-with', '$key', 'drop/'],
          ['starts-with', '$Content-Type', ''],
          ['content-length-range', 1, 1024],
          { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' },
          { 'x-amz-credential': credential },
          { 'x-amz-date': amzDate },
        ],
      },
      storage.credentials,
      amzDate,
    );
    const fields = {
      key: 'drop/${filename}',
      'Content-Type': 'text/plain',
      Policy: policy,
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': credential,
      'X-Amz-Date': amzDate,
      'X-Amz-Signature': signature,
    };
    const res = await uploadWithForm(
      { url: `${t.baseUrl}/storage/remit`, fields },
      {
        content: Buffer.from('hello'),
        type: 'text/plain',
        filename: '../../etc/notes.txt',
      },
    );
    expect(res.status, res.body).toBe(204);
    expect(await storage.headObject('drop/notes.txt')).toEqual({ size: 5, contentType: 'text/plain' });
  });
});
