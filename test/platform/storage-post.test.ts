/**
 * The embedded store's S3-compatible POST endpoint (CONTRACT §6, interface 4.2 step 2): forms made by
 * the AWS SDK's `createPresignedPost` are uploaded for real over HTTP (FormData + fetch, every field
 * iterated, the file last), checked as S3 checks them — SigV4 signature over the policy (constant
 * time), expiry, every condition, no field outside the policy, the size while streaming — with S3's
 * status and XML error code, and nothing stored when refused. Also: the verifier on its own, tampered
 * one field at a time by a property test, and the S3 adapter's presigned POST (offline).
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { LocalObjectStorage } from '../../src/platform/storage/local-storage.ts';
import { verifyPostForm } from '../../src/platform/storage/post-policy.ts';
import { S3ObjectStorage } from '../../src/platform/storage/s3-storage.ts';
import type { PresignedPost } from '../../src/platform/storage/storage.ts';
import {
  amzDateOf,
  listeningTestApp,
  parseS3Error,
  signPolicy,
  uploadWithForm,
  type ListeningTestApp,
} from '../helpers/presigned-post.ts';
import { sampleFile } from '../helpers/sample-files.ts';

const MB = 1024 * 1024;
const LIMIT = 25 * MB;
const PDF = 'application/pdf';

let t: ListeningTestApp;
let storage: LocalObjectStorage;
let n = 0;
const newKey = (name = 'report.pdf') => `org/tests/${Date.now()}-${++n}/${name}`;

const presign = (
  key: string,
  options: { contentType?: string; maxBytes?: number; expiresInSeconds?: number } = {},
) =>
  storage.presignedPost(key, {
    contentType: options.contentType ?? PDF,
    maxBytes: options.maxBytes ?? LIMIT,
    expiresInSeconds: options.expiresInSeconds ?? 900,
  });

const stored = (key: string) =>
  fs.existsSync(path.join(t.config.dataDir, 'objects', storage.bucket, ...key.split('/')));

/** Every object file in the embedded bucket. */
function storedFiles(): string[] {
  const root = path.join(t.config.dataDir, 'objects', storage.bucket);
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) =>
    fs.statSync(path.join(root, f)).isFile(),
  );
}

/** No temporary file left behind by any upload, accepted or refused. */
function tmpFiles(): string[] {
  const dir = path.join(t.config.dataDir, 'objects', '.tmp');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

beforeAll(async () => {
  t = await listeningTestApp();
  storage = t.deps.objectStorage as LocalObjectStorage;
});
afterAll(async () => t?.close());
afterEach(() => {
  expect(tmpFiles()).toEqual([]);
});

describe('presignedPost (embedded store)', () => {
  it("is the AWS SDK's form: url at the service's /storage/<bucket>, the documented fields, a policy pinning key, type and size", async () => {
    const key = newKey();
    const before = Date.now();
    const post = await presign(key);
    expect(post.url).toBe(`${t.baseUrl}/storage/remit`);
    expect(Object.keys(post.fields).sort()).toEqual(
      [
        'Content-Type',
        'Policy',
        'X-Amz-Algorithm',
        'X-Amz-Credential',
        'X-Amz-Date',
        'X-Amz-Signature',
        'bucket',
        'key',
      ].sort(),
    );
    expect(post.fields).toMatchObject({
      key,
      'Content-Type': PDF,
      bucket: 'remit',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    });
    expect(post.fields['X-Amz-Credential']).toMatch(/^RMT[A-Z2-7]{17}\/\d{8}\/us-east-1\/s3\/aws4_request$/);
    expect(post.fields['X-Amz-Signature']).toMatch(/^[0-9a-f]{64}$/);
    const policy = JSON.parse(Buffer.from(post.fields.Policy!, 'base64').toString('utf8'));
    expect(policy.conditions).toEqual(
      expect.arrayContaining([
        { key },
        { 'Content-Type': PDF },
        { bucket: 'remit' },
        ['content-length-range', 1, LIMIT],
        { 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256' },
        { 'X-Amz-Credential': post.fields['X-Amz-Credential'] },
        { 'X-Amz-Date': post.fields['X-Amz-Date'] },
      ]),
    );
    const expires = new Date(policy.expiration).getTime();
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 899_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 900_000);
  });

  it('refuses keys that are not valid keys, and lifetimes outside 1 s to 7 days', async () => {
    await expect(presign('../escape')).rejects.toThrow(/Invalid object key/);
    await expect(presign(newKey(), { expiresInSeconds: 0 })).rejects.toThrow(RangeError);
    await expect(presign(newKey(), { expiresInSeconds: 604_801 })).rejects.toThrow(RangeError);
  });
});

describe('POST /storage/{bucket}: accepted uploads', () => {
  it("stores exactly the bytes with the policy's Content-Type: 204, ETag and Location, no API key, no rate limit headers", async () => {
    const key = newKey();
    const content = sampleFile('pdf', 'Accepted upload');
    const res = await uploadWithForm(await presign(key), { content, filename: 'report.pdf', type: PDF });
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/);
    expect(res.headers.get('location')).toBe(`${t.baseUrl}/storage/remit/${key}`);
    expect(res.headers.get('ratelimit-limit')).toBeNull();
    expect(await storage.headObject(key)).toEqual({ size: content.length, contentType: PDF });
    // And the presigned download serves the same bytes back.
    const download = await fetch(await storage.presignedGetUrl(key, { expiresInSeconds: 60 }));
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(content)).toBe(true);
  });

  it('stores as the policy says whatever type the file part itself declares, and every byte value survives', async () => {
    const key = newKey('bytes.bin');
    const content = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));
    const res = await uploadWithForm(await presign(key, { contentType: 'image/png' }), {
      content,
      type: 'text/plain',
    });
    expect(res.status).toBe(204);
    const object = await storage.getObject(key);
    expect(object?.contentType).toBe('image/png');
    const chunks: Buffer[] = [];
    for await (const chunk of object!.body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(content)).toBe(true);
  });

  it('matches field names case-insensitively (S3 documents them in lower case) and ignores fields after the file', async () => {
    const key = newKey();
    const post = await presign(key);
    const lower = Object.fromEntries(Object.entries(post.fields).map(([k, v]) => [k.toLowerCase(), v]));
    const form = new FormData();
    for (const [name, value] of Object.entries(lower)) form.append(name, value);
    form.append('file', new Blob([new Uint8Array(sampleFile('pdf'))]), 'a.pdf');
    form.append('key', 'org/somewhere/else.pdf'); // after the file: ignored, as by S3
    const res = await fetch(post.url, { method: 'POST', body: form });
    expect(res.status).toBe(204);
    expect(stored(key)).toBe(true);
    expect(stored('org/somewhere/else.pdf')).toBe(false);
  });

  it('accepts a file of exactly 25 MB under the 25 MB policy, every byte of it', async () => {
    const key = newKey('large.pdf');
    const content = Buffer.alloc(LIMIT, 0x41);
    content.write('%PDF-1.4\n', 0, 'latin1');
    content.writeUInt32BE(0xdeadbeef, LIMIT - 4);
    const res = await uploadWithForm(await presign(key), { content, type: PDF });
    expect(res.status, res.body).toBe(204);
    expect((await storage.headObject(key))?.size).toBe(LIMIT);
    const file = fs.readFileSync(path.join(t.config.dataDir, 'objects', storage.bucket, ...key.split('/')));
    expect(file.equals(content)).toBe(true);
  });

  it('accepts a file of exactly the maximum size', async () => {
    const key = newKey();
    const res = await uploadWithForm(await presign(key, { maxBytes: 1000 }), {
      content: Buffer.alloc(1000, 7),
    });
    expect(res.status).toBe(204);
    expect((await storage.headObject(key))?.size).toBe(1000);
  });

  it("accepts a policy signed by hand (not by the SDK), and success_action_status 201 answers S3's PostResponse", async () => {
    const key = newKey();
    const date = amzDateOf(new Date());
    const credential = `${storage.credentials.accessKeyId}/${date.slice(0, 8)}/us-east-1/s3/aws4_request`;
    const { policy, signature } = signPolicy(
      {
        expiration: new Date(Date.now() + 60_000).toISOString(),
        conditions: [
          { bucket: 'remit' },
          ['starts-with', '$key', 'org/tests/'],
          ['eq', '$Content-Type', PDF],
          { success_action_status: '201' },
          ['content-length-range', 1, 100],
          { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' },
          { 'x-amz-credential': credential },
          { 'x-amz-date': date },
        ],
      },
      storage.credentials,
      date,
    );
    const fields = {
      key,
      'Content-Type': PDF,
      success_action_status: '201',
      'x-amz-algorithm': 'AWS4-HMAC-SHA256',
      'x-amz-credential': credential,
      'x-amz-date': date,
      policy,
      'x-amz-signature': signature,
      'x-ignore-note': 'exempt from the policy, as in S3',
    };
    const res = await uploadWithForm(
      { url: `${t.baseUrl}/storage/remit`, fields },
      { content: Buffer.from('%PDF-1.4') },
    );
    expect(res.status).toBe(201);
    expect(res.body).toContain(`<Key>${key}</Key>`);
    expect(res.body).toContain('<Bucket>remit</Bucket>');
    expect(stored(key)).toBe(true);
  });
});

describe('POST /storage/{bucket}: refused uploads store nothing', () => {
  const refusedWith = async (
    result: Promise<{ status: number; error: { code: string; message: string } | null; headers: Headers }>,
    status: number,
    code: string,
  ) => {
    const res = await result;
    expect(res.status, JSON.stringify(res.error)).toBe(status);
    expect(res.error?.code).toBe(code);
    expect(res.headers.get('content-type')).toMatch(/^application\/xml/);
    return res.error!;
  };

  it('a wrong signature → 403 SignatureDoesNotMatch', async () => {
    const key = newKey();
    const post = await presign(key);
    const signature = post.fields['X-Amz-Signature']!;
    const fields = {
      ...post.fields,
      'X-Amz-Signature': (signature[0] === 'a' ? 'b' : 'a') + signature.slice(1),
    };
    await refusedWith(
      uploadWithForm(post, { content: sampleFile('pdf') }, { fields }),
      403,
      'SignatureDoesNotMatch',
    );
    expect(stored(key)).toBe(false);
  });

  it('a tampered policy (a larger size allowed) → 403 SignatureDoesNotMatch', async () => {
    const key = newKey();
    const post = await presign(key, { maxBytes: 10 });
    const policy = JSON.parse(Buffer.from(post.fields.Policy!, 'base64').toString());
    policy.conditions = policy.conditions.map((c: unknown) =>
      Array.isArray(c) && c[0] === 'content-length-range' ? ['content-length-range', 1, LIMIT] : c,
    );
    const fields = { ...post.fields, Policy: Buffer.from(JSON.stringify(policy)).toString('base64') };
    await refusedWith(
      uploadWithForm(post, { content: Buffer.alloc(100) }, { fields }),
      403,
      'SignatureDoesNotMatch',
    );
    expect(stored(key)).toBe(false);
  });

  it('another key → 403 AccessDenied, Policy Condition failed', async () => {
    const key = newKey();
    const other = newKey('other.pdf');
    const post = await presign(key);
    const error = await refusedWith(
      uploadWithForm(post, { content: sampleFile('pdf') }, { fields: { ...post.fields, key: other } }),
      403,
      'AccessDenied',
    );
    expect(error.message).toBe(`Invalid according to Policy: Policy Condition failed: {"key":"${key}"}`);
    expect(stored(key) || stored(other)).toBe(false);
  });

  it('another content type → 403 AccessDenied, Policy Condition failed', async () => {
    const key = newKey();
    const post = await presign(key);
    const error = await refusedWith(
      uploadWithForm(
        post,
        { content: sampleFile('png') },
        { fields: { ...post.fields, 'Content-Type': 'image/png' } },
      ),
      403,
      'AccessDenied',
    );
    expect(error.message).toContain('Policy Condition failed');
    expect(stored(key)).toBe(false);
  });

  it('a field the policy does not cover → 403 AccessDenied, Extra input fields', async () => {
    const key = newKey();
    const post = await presign(key);
    const error = await refusedWith(
      uploadWithForm(post, { content: sampleFile('pdf') }, { extra: [['acl', 'public-read']] }),
      403,
      'AccessDenied',
    );
    expect(error.message).toBe('Invalid according to Policy: Extra input fields: acl');
    expect(stored(key)).toBe(false);
  });

  it('an expired policy → 403 AccessDenied, Policy expired', async () => {
    const key = newKey();
    const date = amzDateOf(new Date(Date.now() - 3_600_000));
    const credential = `${storage.credentials.accessKeyId}/${date.slice(0, 8)}/us-east-1/s3/aws4_request`;
    const signed = signPolicy(
      {
        expiration: new Date(Date.now() - 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        conditions: [
          { bucket: 'remit' },
          { key },
          { 'Content-Type': PDF },
          { 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256' },
          { 'X-Amz-Credential': credential },
          { 'X-Amz-Date': date },
          ['content-length-range', 1, LIMIT],
        ],
      },
      storage.credentials,
      date,
    );
    const fields = {
      key,
      'Content-Type': PDF,
      bucket: 'remit',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': credential,
      'X-Amz-Date': date,
      Policy: signed.policy,
      'X-Amz-Signature': signed.signature,
    };
    const error = await refusedWith(
      uploadWithForm({ url: `${t.baseUrl}/storage/remit`, fields }, { content: sampleFile('pdf') }),
      403,
      'AccessDenied',
    );
    expect(error.message).toBe('Invalid according to Policy: Policy expired.');
    expect(stored(key)).toBe(false);
  });

  it('a policy the SDK made with a 1 s lifetime stops working after it', async () => {
    const key = newKey();
    const post = await presign(key, { expiresInSeconds: 1 });
    // The upload route's clock, 2 s on (a fake clock: no waiting for the policy to expire).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2_000 });
    try {
      const error = await refusedWith(
        uploadWithForm(post, { content: sampleFile('pdf') }),
        403,
        'AccessDenied',
      );
      expect(error.message).toContain('Policy expired');
    } finally {
      vi.useRealTimers();
    }
    expect(stored(key)).toBe(false);
  });

  it('a file one byte over the maximum → 400 EntityTooLarge', async () => {
    const key = newKey();
    await refusedWith(
      uploadWithForm(await presign(key, { maxBytes: 1000 }), { content: Buffer.alloc(1001) }),
      400,
      'EntityTooLarge',
    );
    expect(stored(key)).toBe(false);
  });

  it('over 25 MB → 400 EntityTooLarge, and the service stops reading the request instead of taking it all', async () => {
    const key = newKey();
    const post = await presign(key);
    // A hand-made multipart body whose file is 200 MB of zeros, produced only as fast as it is read.
    const boundary = `----remit${Date.now()}`;
    const head = Buffer.from(
      Object.entries(post.fields)
        .map(
          ([name, value]) =>
            `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
        )
        .join('') +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: ${PDF}\r\n\r\n`,
    );
    const total = 200 * MB;
    const chunk = Buffer.alloc(256 * 1024);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(head));
      },
      pull(controller) {
        if (sent >= total) {
          controller.enqueue(new Uint8Array(Buffer.from(`\r\n--${boundary}--\r\n`)));
          controller.close();
          return;
        }
        sent += chunk.length;
        controller.enqueue(new Uint8Array(chunk));
      },
    });
    const res = await fetch(post.url, {
      method: 'POST',
      body,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(400);
    expect(parseS3Error(await res.text())?.code).toBe('EntityTooLarge');
    expect(res.headers.get('connection')).toBe('close');
    // The answer came while most of the body was still unsent: reading stopped just past the limit.
    expect(sent).toBeLessThan(64 * MB);
    expect(stored(key)).toBe(false);
  });

  it('an empty file → 400 EntityTooSmall', async () => {
    const key = newKey();
    await refusedWith(
      uploadWithForm(await presign(key), { content: Buffer.alloc(0) }),
      400,
      'EntityTooSmall',
    );
    expect(stored(key)).toBe(false);
  });

  it('no file → 400 InvalidArgument; no policy → 403 AccessDenied; not multipart → 412 PreconditionFailed', async () => {
    const post = await presign(newKey());
    const noFile = await uploadWithForm(post, null);
    expect([noFile.status, noFile.error?.code]).toEqual([400, 'InvalidArgument']);
    const { Policy: _policy, ...withoutPolicy } = post.fields;
    const noPolicy = await uploadWithForm(post, { content: sampleFile('pdf') }, { fields: withoutPolicy });
    expect([noPolicy.status, noPolicy.error?.code]).toEqual([403, 'AccessDenied']);
    for (const [type, payload] of [
      ['application/json', JSON.stringify(post.fields)],
      ['application/x-www-form-urlencoded', new URLSearchParams(post.fields).toString()],
      ['text/plain', 'hello'],
    ] as const) {
      const res = await fetch(post.url, { method: 'POST', headers: { 'content-type': type }, body: payload });
      expect([res.status, parseS3Error(await res.text())?.code], type).toEqual([412, 'PreconditionFailed']);
    }
    expect(storedFiles().filter((f) => f.includes(post.fields.key!.split('/')[2]!))).toEqual([]);
  });

  it('a broken multipart body → 400 MalformedPOSTRequest; another bucket → 404 NoSuchBucket', async () => {
    const post = await presign(newKey());
    const broken = await fetch(post.url, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      body: '--xyz\r\nContent-Disposition: form-data; name="key"\r\n\r\nabc',
    });
    expect([broken.status, parseS3Error(await broken.text())?.code]).toEqual([400, 'MalformedPOSTRequest']);
    const other = await uploadWithForm(
      post,
      { content: sampleFile('pdf') },
      { url: `${t.baseUrl}/storage/other-bucket` },
    );
    expect([other.status, other.error?.code]).toEqual([404, 'NoSuchBucket']);
    expect(stored(post.fields.key!)).toBe(false);
  });

  it('fields before the file larger than 20 KB → 400 MaxPostPreDataLengthExceeded', async () => {
    const post = await presign(newKey());
    const res = await uploadWithForm(
      post,
      { content: sampleFile('pdf') },
      { extra: [['x-ignore-pad', 'x'.repeat(21 * 1024)]] },
    );
    expect([res.status, res.error?.code]).toEqual([400, 'MaxPostPreDataLengthExceeded']);
  });
});

describe('verifyPostForm (property: every field is load-bearing)', () => {
  const credentials = {
    accessKeyId: 'AKIDEXAMPLE1234567890',
    secretAccessKey: 'secret/for+tests=only0123456789abcdef',
  };
  let presigner: S3ObjectStorage;
  let post: PresignedPost;
  const verify = (fields: Record<string, string>, now = new Date()) =>
    verifyPostForm(new Map(Object.entries(fields).map(([k, v]) => [k.toLowerCase(), v])), {
      credentials,
      region: 'us-east-1',
      bucket: 'remit',
      now,
    });

  beforeAll(async () => {
    presigner = new S3ObjectStorage({
      kind: 's3',
      endpoint: 'http://127.0.0.1:9/storage',
      bucket: 'remit',
      region: 'us-east-1',
      ...credentials,
    });
    post = await presigner.presignedPost('org/knowledge/doc/report.pdf', {
      contentType: PDF,
      maxBytes: LIMIT,
      expiresInSeconds: 900,
    });
  });
  afterAll(async () => presigner?.close());

  it('accepts the untouched form, with the limits of its policy', () => {
    expect(verify(post.fields)).toMatchObject({
      ok: true,
      key: 'org/knowledge/doc/report.pdf',
      contentType: PDF,
      minBytes: 1,
      maxBytes: LIMIT,
      successStatus: 204,
    });
  });

  it('refuses the form when any one field is changed, dropped, or one is added', () => {
    const names = Object.keys(post.fields);
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        fc.oneof(
          fc.record({
            op: fc.constant('replace' as const),
            value: fc.string({ minLength: 0, maxLength: 40 }),
          }),
          fc.record({ op: fc.constant('append' as const), value: fc.string({ minLength: 1, maxLength: 5 }) }),
          fc.record({ op: fc.constant('flip' as const), at: fc.nat() }),
          fc.record({ op: fc.constant('drop' as const) }),
        ),
        (name, change) => {
          const original = post.fields[name]!;
          const fields = { ...post.fields };
          if (change.op === 'drop') delete fields[name];
          else if (change.op === 'append') fields[name] = original + change.value;
          else if (change.op === 'replace') fields[name] = change.value;
          else {
            const i = change.at % original.length;
            const c = original[i]!;
            fields[name] =
              original.slice(0, i) +
              (c === 'A' ? 'B' : c === '0' ? '1' : c === 'a' ? 'b' : 'A') +
              original.slice(i + 1);
          }
          fc.pre(fields[name] !== original || change.op === 'drop');
          // `bucket` may be dropped: the bucket is the one the request is addressed to.
          fc.pre(!(name === 'bucket' && change.op === 'drop'));
          const result = verify(fields);
          expect(result.ok, `${name} ${JSON.stringify(change)}`).toBe(false);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('refuses any extra field, and accepts x-ignore- ones', () => {
    fc.assert(
      fc.property(
        fc
          .stringMatching(/^[a-z][a-z0-9-]{0,20}$/)
          .filter((n) => !(n in post.fields) && !n.startsWith('x-ignore-')),
        fc.string({ maxLength: 20 }),
        (name, value) => {
          expect(verify({ ...post.fields, [name]: value }).ok).toBe(false);
        },
      ),
    );
    expect(verify({ ...post.fields, 'x-ignore-anything': 'v' }).ok).toBe(true);
  });

  it('refuses the form after its expiration, and names the reason', () => {
    const policy = JSON.parse(Buffer.from(post.fields.Policy!, 'base64').toString());
    const after = new Date(new Date(policy.expiration).getTime() + 1000);
    expect(verify(post.fields, after)).toMatchObject({
      ok: false,
      status: 403,
      code: 'AccessDenied',
      message: 'Invalid according to Policy: Policy expired.',
    });
  });

  it('refuses a form signed with another secret, or another key id', () => {
    const result = verifyPostForm(
      new Map(Object.entries(post.fields).map(([k, v]) => [k.toLowerCase(), v])),
      {
        credentials: { ...credentials, secretAccessKey: 'another-secret-0123456789abcdefghij' },
        region: 'us-east-1',
        bucket: 'remit',
      },
    );
    expect(result).toMatchObject({ ok: false, status: 403, code: 'SignatureDoesNotMatch' });
    const other = verifyPostForm(new Map(Object.entries(post.fields).map(([k, v]) => [k.toLowerCase(), v])), {
      credentials: { ...credentials, accessKeyId: 'AKIDANOTHER123456789' },
      region: 'us-east-1',
      bucket: 'remit',
    });
    expect(other).toMatchObject({ ok: false, status: 403, code: 'InvalidAccessKeyId' });
  });
});

describe('S3ObjectStorage.presignedPost (offline)', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  it('posts to <S3_ENDPOINT>/<bucket> with the same fields and policy (S3 then checks them)', async () => {
    const config = loadConfig({
      S3_ENDPOINT: 'http://127.0.0.1:9000',
      S3_BUCKET: 'remit-test',
      S3_ACCESS_KEY_ID: 'minioadmin',
      S3_SECRET_ACCESS_KEY: 'minioadmin',
    });
    const s3 = new S3ObjectStorage(
      config.objectStorage as Extract<typeof config.objectStorage, { kind: 's3' }>,
    );
    try {
      const post = await s3.presignedPost('org/knowledge/doc/report.pdf', {
        contentType: PDF,
        maxBytes: LIMIT,
        expiresInSeconds: 900,
      });
      expect(post.url).toBe('http://127.0.0.1:9000/remit-test');
      expect(post.fields).toMatchObject({
        key: 'org/knowledge/doc/report.pdf',
        'Content-Type': PDF,
        bucket: 'remit-test',
      });
      expect(post.fields['X-Amz-Credential']).toMatch(/^minioadmin\/\d{8}\/us-east-1\/s3\/aws4_request$/);
      expect(post.fields).not.toHaveProperty('X-Amz-Security-Token');
      const policy = JSON.parse(Buffer.from(post.fields.Policy!, 'base64').toString());
      expect(policy.conditions).toEqual(
        expect.arrayContaining([
          { key: 'org/knowledge/doc/report.pdf' },
          { 'Content-Type': PDF },
          ['content-length-range', 1, LIMIT],
        ]),
      );
      // The signature is a correct SigV4 POST signature for those credentials.
      const checked = verifyPostForm(
        new Map(Object.entries(post.fields).map(([k, v]) => [k.toLowerCase(), v])),
        {
          credentials: { accessKeyId: 'minioadmin', secretAccessKey: 'minioadmin' },
          region: 'us-east-1',
          bucket: 'remit-test',
        },
      );
      expect(checked.ok).toBe(true);
    } finally {
      await s3.close();
    }
  });

  it('adds X-Amz-Security-Token, and a policy condition for it, when the credentials are temporary', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'ASIATEMPORARYKEY1234';
    process.env.AWS_SECRET_ACCESS_KEY = 'temporary-secret-0123456789abcdef';
    process.env.AWS_SESSION_TOKEN = 'session-token-from-sts';
    // No S3_ACCESS_KEY_ID: the SDK's default chain, which reads the environment first (no network).
    const s3 = new S3ObjectStorage({
      kind: 's3',
      endpoint: 'http://127.0.0.1:9000',
      bucket: 'remit-test',
      region: 'eu-west-1',
      accessKeyId: undefined,
      secretAccessKey: undefined,
    });
    try {
      const post = await s3.presignedPost('org/k/doc/a.png', {
        contentType: 'image/png',
        maxBytes: LIMIT,
        expiresInSeconds: 900,
      });
      expect(post.fields['X-Amz-Security-Token']).toBe('session-token-from-sts');
      expect(post.fields['X-Amz-Credential']).toMatch(
        /^ASIATEMPORARYKEY1234\/\d{8}\/eu-west-1\/s3\/aws4_request$/,
      );
      const policy = JSON.parse(Buffer.from(post.fields.Policy!, 'base64').toString());
      expect(policy.conditions).toContainEqual({ 'X-Amz-Security-Token': 'session-token-from-sts' });
    } finally {
      await s3.close();
    }
  });
});
