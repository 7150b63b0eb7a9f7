/**
 * Object storage (CONTRACT §6): the SigV4 presigned-URL verifier of the embedded endpoint (against AWS's
 * published example and against URLs the AWS SDK signs, tampered one part at a time), the embedded
 * store on disk, its persistent credentials, the S3 implementation's presigner (offline), and the
 * configuration that picks one or the other.
 */
import { Readable } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client, GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createObjectStorage } from '../../src/platform/storage/create-storage.ts';
import { LocalObjectStorage } from '../../src/platform/storage/local-storage.ts';
import { S3ObjectStorage } from '../../src/platform/storage/s3-storage.ts';
import { verifyPresignedRequest, type VerifyResult } from '../../src/platform/storage/sigv4.ts';
import {
  assertValidKey,
  contentDisposition,
  ObjectStorageError,
  sanitizeFilename,
} from '../../src/platform/storage/storage.ts';

const credentials = {
  accessKeyId: 'AKIDEXAMPLE1234567890',
  secretAccessKey: 'secret/for+tests=only0123456789abcdef',
};
const region = 'us-east-1';

/** A URL signed by the AWS SDK's own presigner, as both implementations make them. */
async function sdkSigned(
  options: {
    endpoint?: string;
    key?: string;
    expiresIn?: number;
    signingDate?: Date;
    disposition?: string;
    creds?: typeof credentials;
    region?: string;
  } = {},
) {
  const client = new S3Client({
    endpoint: options.endpoint ?? 'http://127.0.0.1:3000/storage',
    region: options.region ?? region,
    forcePathStyle: true,
    credentials: options.creds ?? credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const url = await getSignedUrl(
    client,
    new GetObjectCommand({
      Bucket: 'remit',
      Key: options.key ?? 'org/invoices/inv/att/report (final).pdf',
      ...(options.disposition ? { ResponseContentDisposition: options.disposition } : {}),
    }),
    {
      expiresIn: options.expiresIn ?? 900,
      ...(options.signingDate ? { signingDate: options.signingDate } : {}),
    },
  );
  client.destroy();
  return new URL(url);
}

const verify = (
  url: URL,
  overrides: { method?: string; host?: string; now?: Date; creds?: typeof credentials } = {},
) =>
  verifyPresignedRequest(
    {
      method: overrides.method ?? 'GET',
      url: url.pathname + url.search,
      headers: { host: overrides.host ?? url.host },
    },
    { credentials: overrides.creds ?? credentials, region, ...(overrides.now ? { now: overrides.now } : {}) },
  );

const refused = (result: VerifyResult) => {
  expect(result.ok).toBe(false);
  return result as Extract<VerifyResult, { ok: false }>;
};

/** The query string with one parameter's raw value replaced (or removed), order kept. */
function withParam(url: URL, name: string, value: string | null): URL {
  const pairs = url.search
    .slice(1)
    .split('&')
    .flatMap((pair) => {
      const [n] = pair.split('=');
      if (decodeURIComponent(n!) !== name) return [pair];
      return value === null ? [] : [`${n}=${encodeURIComponent(value)}`];
    });
  const copy = new URL(url);
  copy.search = `?${pairs.join('&')}`;
  return copy;
}

describe('SigV4 presigned URL verifier', () => {
  it("accepts AWS's published example (GET /test.txt, examplebucket, 2013-05-24)", () => {
    // https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
    const url =
      '/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
      '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
      '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
    const options = {
      credentials: {
        accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
        secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      },
      region: 'us-east-1',
      now: new Date('2013-05-24T12:00:00Z'),
    };
    const request = { method: 'GET', url, headers: { host: 'examplebucket.s3.amazonaws.com' } };
    expect(verifyPresignedRequest(request, options)).toMatchObject({
      ok: true,
      rawPath: '/test.txt',
      expiresAt: new Date('2013-05-25T00:00:00Z'),
    });
    // One character of the key changed.
    expect(
      verifyPresignedRequest({ ...request, url: url.replace('/test.txt', '/test.txT') }, options),
    ).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
  });

  it('accepts what the AWS SDK signs, with the parameters S3 expects', async () => {
    const url = await sdkSigned({ disposition: 'attachment; filename="report.pdf"' });
    for (const name of [
      'X-Amz-Algorithm',
      'X-Amz-Credential',
      'X-Amz-Date',
      'X-Amz-Expires',
      'X-Amz-SignedHeaders',
      'X-Amz-Signature',
    ]) {
      expect(url.searchParams.has(name)).toBe(true);
    }
    const result = verify(url);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.params.get('response-content-disposition')).toBe('attachment; filename="report.pdf"');
      expect(result.rawPath).toBe('/storage/remit/org/invoices/inv/att/report%20%28final%29.pdf');
    }
  });

  it('accepts keys with characters the SDK must encode', async () => {
    for (const key of ['a/b c/d+e.pdf', 'ü/ñ/日本.pdf', "x/!'()*~.-_", 'k/%41%2F', 'a=b&c=d?e#f']) {
      expect(verify(await sdkSigned({ key })).ok, key).toBe(true);
    }
  });

  it('refuses the URL when any one signed query parameter is changed', async () => {
    const url = await sdkSigned({ disposition: 'attachment; filename="a.pdf"' });
    const names = [...url.searchParams.keys()].filter((n) => n !== 'X-Amz-Signature');
    expect(names.length).toBeGreaterThanOrEqual(6);
    for (const name of names) {
      const value = url.searchParams.get(name)!;
      // Well-formed changes, so each one reaches the signature check or a scope check.
      const changed: Record<string, string> = {
        'X-Amz-Algorithm': 'AWS4-HMAC-SHA512',
        'X-Amz-Credential': value.replace(credentials.accessKeyId, 'AKIDOTHER00000000000'),
        'X-Amz-Date': value.replace(/(\d)Z$/, (_, d: string) => `${(Number(d) + 1) % 10}Z`),
        'X-Amz-Expires': '901',
        'X-Amz-SignedHeaders': 'host;x-amz-date',
        'response-content-disposition': 'inline',
        'x-id': 'PutObject',
      };
      const result = refused(verify(withParam(url, name, changed[name] ?? `${value}x`)));
      expect([400, 403], name).toContain(result.status);
    }
  });

  it('refuses a changed, truncated, or repeated signature, and one made with another secret', async () => {
    const url = await sdkSigned();
    const sig = url.searchParams.get('X-Amz-Signature')!;
    const flipped = (sig[0] === '0' ? '1' : '0') + sig.slice(1);
    expect(refused(verify(withParam(url, 'X-Amz-Signature', flipped))).code).toBe('SignatureDoesNotMatch');
    expect(refused(verify(withParam(url, 'X-Amz-Signature', sig.slice(0, 63)))).code).toBe(
      'SignatureDoesNotMatch',
    );
    expect(refused(verify(withParam(url, 'X-Amz-Signature', sig.toUpperCase()))).code).toBe(
      'SignatureDoesNotMatch',
    );
    const twice = new URL(url);
    twice.search += `&X-Amz-Signature=${sig}`;
    expect(refused(verify(twice)).code).toBe('AuthorizationQueryParametersError');
    const forged = await sdkSigned({ creds: { ...credentials, secretAccessKey: 'not-the-secret' } });
    expect(refused(verify(forged)).code).toBe('SignatureDoesNotMatch');
  });

  it('refuses when a parameter is removed or one is added', async () => {
    const url = await sdkSigned({ disposition: 'attachment' });
    for (const name of [...url.searchParams.keys()]) {
      const result = refused(verify(withParam(url, name, null)));
      expect([400, 403], name).toContain(result.status);
    }
    for (const extra of [
      'response-content-type=text%2Fhtml',
      'X-Amz-Security-Token=abc',
      'versionId=1',
      'flag',
    ]) {
      const copy = new URL(url);
      copy.search += `&${extra}`;
      expect(refused(verify(copy)).code, extra).toBe('SignatureDoesNotMatch');
    }
  });

  it('refuses a changed path: another key, bucket, prefix, case, encoding or extra segment', async () => {
    const url = await sdkSigned({ key: 'org/file.pdf' });
    for (const pathname of [
      '/storage/remit/org/file.pdF',
      '/storage/other/org/file.pdf',
      '/storage/remit/org/file.pdf/x',
      '/storage/remit/org//file.pdf',
      '/storage/remit/org/%66ile.pdf',
      '/files/remit/org/file.pdf',
      '/storage/remit/org/../org/file.pdf',
    ]) {
      // Raw strings: a URL object would normalise `..` away before the verifier sees it.
      const result = verifyPresignedRequest(
        { method: 'GET', url: pathname + url.search, headers: { host: url.host } },
        { credentials, region },
      );
      expect(refused(result).code, pathname).toBe('SignatureDoesNotMatch');
    }
  });

  it('refuses another method or Host header than the ones signed', async () => {
    const url = await sdkSigned();
    for (const method of ['HEAD', 'PUT', 'DELETE', 'POST']) {
      expect(refused(verify(url, { method })).code).toBe('SignatureDoesNotMatch');
    }
    for (const host of ['localhost:3000', '127.0.0.1:3001', '127.0.0.1', 'evil.test']) {
      expect(refused(verify(url, { host })).code).toBe('SignatureDoesNotMatch');
    }
  });

  it('403 "Request has expired" once X-Amz-Expires has passed, not a second before', async () => {
    const signingDate = new Date('2026-03-01T10:00:00Z');
    const url = await sdkSigned({ signingDate, expiresIn: 60 });
    expect(verify(url, { now: new Date('2026-03-01T10:00:00Z') }).ok).toBe(true);
    expect(verify(url, { now: new Date('2026-03-01T10:01:00Z') }).ok).toBe(true);
    const expired = refused(verify(url, { now: new Date('2026-03-01T10:01:01Z') }));
    expect(expired).toMatchObject({ status: 403, code: 'AccessDenied', message: 'Request has expired' });
    // Far in the future: not valid yet (beyond the clock-skew allowance of 15 minutes).
    expect(verify(url, { now: new Date('2026-03-01T09:50:00Z') }).ok).toBe(true);
    expect(refused(verify(url, { now: new Date('2026-03-01T09:40:00Z') })).message).toBe(
      'Request is not valid yet',
    );
  });

  it('400 for a malformed query; 403 InvalidAccessKeyId for another key id; region and service checked', async () => {
    const url = await sdkSigned();
    const credential = url.searchParams.get('X-Amz-Credential')!;
    const cases: [URL, number, string][] = [
      [withParam(url, 'X-Amz-Expires', '604801'), 400, 'AuthorizationQueryParametersError'],
      [withParam(url, 'X-Amz-Expires', '-5'), 400, 'AuthorizationQueryParametersError'],
      [withParam(url, 'X-Amz-Date', '2026-03-01T10:00:00Z'), 400, 'AuthorizationQueryParametersError'],
      [withParam(url, 'X-Amz-Date', '20261399T000000Z'), 400, 'AuthorizationQueryParametersError'],
      [
        withParam(url, 'X-Amz-Credential', credential.replace('/us-east-1/', '/eu-west-1/')),
        400,
        'AuthorizationQueryParametersError',
      ],
      [
        withParam(url, 'X-Amz-Credential', credential.replace('/s3/', '/iam/')),
        400,
        'AuthorizationQueryParametersError',
      ],
      [
        withParam(url, 'X-Amz-Credential', credential.replace(/\/\d{8}\//, '/20000101/')),
        400,
        'AuthorizationQueryParametersError',
      ],
      [withParam(url, 'X-Amz-Credential', 'garbage'), 400, 'AuthorizationQueryParametersError'],
      [
        withParam(url, 'X-Amz-Credential', credential.replace(credentials.accessKeyId, 'AKIDOTHER')),
        403,
        'InvalidAccessKeyId',
      ],
      [withParam(url, 'X-Amz-SignedHeaders', 'x-amz-date'), 400, 'AuthorizationQueryParametersError'],
      [withParam(url, 'X-Amz-SignedHeaders', 'x-b;host'), 400, 'AuthorizationQueryParametersError'],
    ];
    for (const [address, status, code] of cases) {
      expect(refused(verify(address)), address.search).toMatchObject({ status, code });
    }
    const broken = new URL(url);
    broken.search += '&bad=%E0%A4%A';
    expect(refused(verify(broken)).status).toBe(400);
    const bare = new URL(url);
    bare.search = '';
    expect(refused(verify(bare))).toMatchObject({ status: 403, code: 'AccessDenied' });
  });
});

describe('LocalObjectStorage (embedded)', () => {
  let dir: string;
  let storage: LocalObjectStorage;
  const bucketDir = () => path.join(dir, 'remit');

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-storage-test-'));
    storage = await LocalObjectStorage.open({
      rootDir: dir,
      bucket: 'remit',
      publicBaseUrl: 'http://files.test:8080',
    });
  });
  afterAll(async () => {
    await storage?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stores, describes, streams back and deletes objects, from a Buffer or a stream', async () => {
    const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));
    expect(await storage.putObject('a/b/one.bin', bytes, { contentType: 'application/x-test' })).toEqual({
      size: 1000,
    });
    expect(
      await storage.putObject('a/b/two.txt', Readable.from([Buffer.from('he'), Buffer.from('llo')]), {
        contentType: 'text/plain',
      }),
    ).toEqual({ size: 5 });
    expect(await storage.headObject('a/b/one.bin')).toEqual({
      size: 1000,
      contentType: 'application/x-test',
    });
    const got = await storage.getObject('a/b/one.bin');
    const chunks: Buffer[] = [];
    for await (const chunk of got!.body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    expect(got).toMatchObject({ size: 1000, contentType: 'application/x-test' });
    expect(fs.readFileSync(path.join(bucketDir(), 'a/b/two.txt'), 'utf8')).toBe('hello');
    expect(JSON.parse(fs.readFileSync(path.join(dir, '.meta/remit/a/b/two.txt'), 'utf8'))).toMatchObject({
      key: 'a/b/two.txt',
      content_type: 'text/plain',
      size: 5,
    });

    await storage.putObject('a/b/two.txt', Buffer.from('replaced'), { contentType: 'text/markdown' });
    expect(await storage.headObject('a/b/two.txt')).toEqual({ size: 8, contentType: 'text/markdown' });

    await storage.deleteObject('a/b/one.bin');
    await storage.deleteObject('a/b/two.txt');
    await storage.deleteObject('a/b/two.txt'); // again: not an error, as in S3
    expect(await storage.headObject('a/b/one.bin')).toBeNull();
    expect(await storage.getObject('a/b/two.txt')).toBeNull();
    // Directories left empty are removed, as S3 has none.
    expect(fs.existsSync(path.join(bucketDir(), 'a'))).toBe(false);
    expect(fs.readdirSync(path.join(dir, '.tmp'))).toEqual([]);
  });

  it('stores nothing when the stream fails or is not the announced length', async () => {
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('client went away'));
      },
    });
    await expect(storage.putObject('f/broken.bin', failing, { contentType: 'text/plain' })).rejects.toThrow(
      'client went away',
    );
    await expect(
      storage.putObject('f/short.bin', Readable.from([Buffer.from('abc')]), {
        contentType: 'text/plain',
        contentLength: 4,
      }),
    ).rejects.toMatchObject({ code: 'size_mismatch' });
    expect(await storage.headObject('f/broken.bin')).toBeNull();
    expect(await storage.headObject('f/short.bin')).toBeNull();
    expect(fs.readdirSync(path.join(dir, '.tmp'))).toEqual([]);
  });

  it('refuses keys that are not safe relative paths, and keys that are prefixes of others', async () => {
    for (const key of [
      '',
      '/abs',
      'a//b',
      'a/../b',
      '..',
      './a',
      'a/.',
      'a\\b',
      'nul\u0000x',
      'x'.repeat(1025),
      'a/',
    ]) {
      await expect(
        storage.putObject(key, Buffer.from('x'), { contentType: 'text/plain' }),
        JSON.stringify(key),
      ).rejects.toBeInstanceOf(ObjectStorageError);
      expect(() => assertValidKey(key)).toThrow(ObjectStorageError);
    }
    expect(fs.existsSync(path.join(dir, 'b'))).toBe(false);
    await storage.putObject('p/leaf', Buffer.from('x'), { contentType: 'text/plain' });
    await expect(
      storage.putObject('p/leaf/child', Buffer.from('y'), { contentType: 'text/plain' }),
    ).rejects.toMatchObject({
      code: 'key_conflict',
    });
    await expect(
      storage.putObject('p', Buffer.from('y'), { contentType: 'text/plain' }),
    ).rejects.toMatchObject({
      code: 'key_conflict',
    });
    expect(await storage.headObject('p/leaf')).toEqual({ size: 1, contentType: 'text/plain' });
  });

  it('signs URLs for its own endpoint, and verifyDownload serves them', async () => {
    await storage.putObject('d/report.pdf', Buffer.from('%PDF'), { contentType: 'application/pdf' });
    const url = new URL(
      await storage.presignedGetUrl('d/report.pdf', { expiresInSeconds: 300, filename: 'Report ü.pdf' }),
    );
    expect(url.origin).toBe('http://files.test:8080');
    expect(url.pathname).toBe('/storage/remit/d/report.pdf');
    expect(url.searchParams.get('X-Amz-Credential')).toMatch(
      new RegExp(`^${storage.credentials.accessKeyId}/\\d{8}/us-east-1/s3/aws4_request$`),
    );
    const result = await storage.verifyDownload({
      method: 'GET',
      url: url.pathname + url.search,
      headers: { host: url.host },
    });
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.key).toBe('d/report.pdf');
      expect(result.contentDisposition).toBe(contentDisposition('Report ü.pdf'));
      result.object.body.destroy();
    }
    const missing = new URL(await storage.presignedGetUrl('d/none.pdf', { expiresInSeconds: 300 }));
    expect(
      await storage.verifyDownload({
        method: 'GET',
        url: missing.pathname + missing.search,
        headers: { host: missing.host },
      }),
    ).toMatchObject({
      ok: false,
      status: 404,
      code: 'NoSuchKey',
    });
    await expect(storage.presignedGetUrl('d/report.pdf', { expiresInSeconds: 604_801 })).rejects.toThrow(
      RangeError,
    );
    await expect(storage.presignedGetUrl('d/report.pdf', { expiresInSeconds: 0 })).rejects.toThrow(
      RangeError,
    );
  });

  it('keeps its credentials in .credentials (0600): URLs survive a restart', async () => {
    // Its own object: the presign test that also stores one may run before or after this one.
    await storage.putObject('d/kept.pdf', Buffer.from('%PDF'), { contentType: 'application/pdf' });
    const url = new URL(await storage.presignedGetUrl('d/kept.pdf', { expiresInSeconds: 300 }));
    const file = path.join(dir, '.credentials');
    if (process.platform !== 'win32') expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(saved.access_key_id).toBe(storage.credentials.accessKeyId);
    expect(saved.secret_access_key.length).toBeGreaterThanOrEqual(32);

    const reopened = await LocalObjectStorage.open({
      rootDir: dir,
      bucket: 'remit',
      publicBaseUrl: 'http://files.test:8080',
    });
    expect(reopened.credentials).toEqual(storage.credentials);
    const result = await reopened.verifyDownload({
      method: 'GET',
      url: url.pathname + url.search,
      headers: { host: url.host },
    });
    expect(result.ok).toBe(true);
    if (result.ok) result.object.body.destroy();

    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-storage-other-'));
    try {
      const other = await LocalObjectStorage.open({
        rootDir: elsewhere,
        bucket: 'remit',
        publicBaseUrl: 'http://files.test:8080',
      });
      expect(other.credentials.accessKeyId).not.toBe(storage.credentials.accessKeyId);
      const foreign = await other.verifyDownload({
        method: 'GET',
        url: url.pathname + url.search,
        headers: { host: url.host },
      });
      expect(foreign).toMatchObject({ ok: false, code: 'InvalidAccessKeyId' });
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('two stores opening one fresh directory at once agree on one set of credentials', async () => {
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-storage-race-'));
    try {
      const opened = await Promise.all(
        Array.from({ length: 5 }, () =>
          LocalObjectStorage.open({ rootDir: fresh, bucket: 'remit', publicBaseUrl: 'http://x.test' }),
        ),
      );
      const ids = new Set(opened.map((s) => s.credentials.accessKeyId));
      expect(ids.size).toBe(1);
    } finally {
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });
});

describe('S3ObjectStorage presigner (offline: no S3 is reached)', () => {
  it('signs path-style SigV4 URLs at S3_ENDPOINT that our verifier accepts for the same credentials', async () => {
    const storage = new S3ObjectStorage({
      kind: 's3',
      endpoint: 'http://minio.test:9000',
      bucket: 'remit-files',
      region: 'eu-central-1',
      ...{ accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
    });
    try {
      const url = new URL(
        await storage.presignedGetUrl('org/invoices/x/y/a b.pdf', {
          expiresInSeconds: 900,
          filename: 'a b.pdf',
        }),
      );
      expect(url.origin).toBe('http://minio.test:9000');
      expect(url.pathname).toBe('/remit-files/org/invoices/x/y/a%20b.pdf');
      expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
      expect(url.searchParams.get('X-Amz-Credential')).toMatch(
        new RegExp(`^${credentials.accessKeyId}/\\d{8}/eu-central-1/s3/aws4_request$`),
      );
      expect(url.searchParams.get('X-Amz-Date')).toMatch(/^\d{8}T\d{6}Z$/);
      expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
      expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
      expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
      expect(url.searchParams.get('response-content-disposition')).toBe(contentDisposition('a b.pdf'));
      expect(url.searchParams.has('x-amz-checksum-mode')).toBe(false);

      const request = { method: 'GET', url: url.pathname + url.search, headers: { host: url.host } };
      expect(verifyPresignedRequest(request, { credentials, region: 'eu-central-1' }).ok).toBe(true);
      expect(verifyPresignedRequest(request, { credentials, region: 'us-east-1' }).ok).toBe(false);
      expect(
        verifyPresignedRequest(request, {
          credentials: { ...credentials, secretAccessKey: 'other' },
          region: 'eu-central-1',
        }).ok,
      ).toBe(false);
    } finally {
      await storage.close();
    }
  });

  it('signs for AWS itself when S3_ENDPOINT is unset', async () => {
    const storage = new S3ObjectStorage({
      kind: 's3',
      endpoint: undefined,
      bucket: 'remit-files',
      region: 'us-west-2',
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
    });
    try {
      const url = new URL(await storage.presignedGetUrl('k.txt', { expiresInSeconds: 60 }));
      expect(url.host).toBe('s3.us-west-2.amazonaws.com');
      expect(url.pathname).toBe('/remit-files/k.txt');
      expect(verify(url, { creds: credentials }).ok).toBe(false); // region differs from the verifier's
      expect(
        verifyPresignedRequest(
          { method: 'GET', url: url.pathname + url.search, headers: { host: url.host } },
          { credentials, region: 'us-west-2' },
        ).ok,
      ).toBe(true);
    } finally {
      await storage.close();
    }
  });
});

describe('configuration', () => {
  it('embedded by default; S3 when any S3_* variable is set', async () => {
    expect(loadConfig({}).objectStorage).toEqual({ kind: 'embedded', bucket: 'remit' });
    expect(loadConfig({}).presignedUrlExpiresS).toBe(900);
    expect(
      loadConfig({
        S3_ENDPOINT: 'http://minio:9000',
        S3_BUCKET: 'files',
        S3_ACCESS_KEY_ID: 'minio',
        S3_SECRET_ACCESS_KEY: 'minio123',
      }).objectStorage,
    ).toEqual({
      kind: 's3',
      endpoint: 'http://minio:9000',
      bucket: 'files',
      region: 'us-east-1',
      accessKeyId: 'minio',
      secretAccessKey: 'minio123',
    });
    expect(loadConfig({ S3_BUCKET: 'files', S3_REGION: 'eu-west-1' }).objectStorage).toMatchObject({
      kind: 's3',
      endpoint: undefined,
      region: 'eu-west-1',
      accessKeyId: undefined,
    });
    expect(loadConfig({ PRESIGNED_URL_EXPIRES_S: '60' }).presignedUrlExpiresS).toBe(60);
  });

  it('refuses incomplete or invalid S3 settings', () => {
    const bad = [
      { S3_ENDPOINT: 'http://minio:9000' },
      { S3_BUCKET: 'Bad_Bucket' },
      { S3_BUCKET: 'files', S3_ENDPOINT: 'minio:9000' },
      { S3_BUCKET: 'files', S3_ACCESS_KEY_ID: 'only-the-id' },
      { PRESIGNED_URL_EXPIRES_S: '0' },
      { PRESIGNED_URL_EXPIRES_S: '604801' },
    ];
    for (const env of bad) expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
  });

  it('createObjectStorage picks the implementation and keeps the embedded files under DATA_DIR/objects', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-storage-config-'));
    try {
      const local = await createObjectStorage(loadConfig({ DATA_DIR: dataDir }));
      expect(local).toBeInstanceOf(LocalObjectStorage);
      expect(fs.existsSync(path.join(dataDir, 'objects', '.credentials'))).toBe(true);
      expect(fs.existsSync(path.join(dataDir, 'objects', 'remit'))).toBe(true);
      await local.close();
      const s3 = await createObjectStorage(
        loadConfig({ DATA_DIR: dataDir, S3_BUCKET: 'files', S3_ENDPOINT: 'http://minio:9000' }),
      );
      expect(s3).toBeInstanceOf(S3ObjectStorage);
      expect(s3.bucket).toBe('files');
      await s3.close();
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('file names', () => {
  it('sanitizeFilename keeps keys to safe characters and the extension', () => {
    expect(sanitizeFilename('Été rapport (1).PDF')).toBe('Ete_rapport_1_.PDF');
    expect(sanitizeFilename('../../etc/passwd')).toBe('passwd');
    expect(sanitizeFilename('C:\\Users\\me\\file.txt')).toBe('file.txt');
    expect(sanitizeFilename('.env')).toBe('env');
    expect(sanitizeFilename('日本語')).toBe('file');
    expect(sanitizeFilename('')).toBe('file');
    const long = sanitizeFilename(`${'a'.repeat(300)}.pdf`);
    expect(long).toHaveLength(120);
    expect(long.endsWith('.pdf')).toBe(true);
  });

  it('contentDisposition is attachment with an ASCII fallback and the UTF-8 name', () => {
    expect(contentDisposition('a.pdf')).toBe(`attachment; filename="a.pdf"; filename*=UTF-8''a.pdf`);
    expect(contentDisposition('naïve "q".pdf')).toBe(
      `attachment; filename="naive _q_.pdf"; filename*=UTF-8''na%C3%AFve%20%22q%22.pdf`,
    );
  });
});
