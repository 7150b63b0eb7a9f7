import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalObjectStorage } from '../../src/platform/storage/local-storage.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

/** Presigned downloads from the embedded store answer Range requests as S3 does (206, 416). */
let t: TestApp;
let url: URL;
const bytes = Buffer.from(Array.from({ length: 100 }, (_, i) => i));

beforeAll(async () => {
  t = await createTestApp();
  const storage = t.deps.objectStorage as LocalObjectStorage;
  await storage.putObject('range/data.bin', bytes, { contentType: 'application/octet-stream' });
  url = new URL(await storage.presignedGetUrl('range/data.bin', { expiresInSeconds: 300 }));
});
afterAll(async () => t?.close());

const download = (range?: string) =>
  t.app.inject({
    method: 'GET',
    url: url.pathname + url.search,
    headers: { host: url.host, ...(range ? { range } : {}) },
  });

describe('Range on presigned downloads', () => {
  it('no Range: 200 with the whole object and Accept-Ranges', async () => {
    const res = await download();
    expect(res.statusCode).toBe(200);
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.rawPayload).toEqual(bytes);
  });

  it('bytes=a-b, a-, -n: 206 with Content-Range and exactly those bytes', async () => {
    for (const [range, start, end] of [
      ['bytes=10-19', 10, 19],
      ['bytes=95-', 95, 99],
      ['bytes=-3', 97, 99],
      ['bytes=90-500', 90, 99],
    ] as const) {
      const res = await download(range);
      expect(res.statusCode, range).toBe(206);
      expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/100`);
      expect(Number(res.headers['content-length'])).toBe(end - start + 1);
      expect(res.rawPayload).toEqual(bytes.subarray(start, end + 1));
    }
  });

  it('past the end: 416 InvalidRange with Content-Range bytes */size', async () => {
    const res = await download('bytes=100-');
    expect(res.statusCode).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */100');
    expect(res.body).toContain('<Code>InvalidRange</Code>');
  });

  it('several ranges or a malformed one: the whole object, as S3 does', async () => {
    for (const range of ['bytes=0-1,5-6', 'bytes=9-1', 'lines=1-2']) {
      const res = await download(range);
      expect(res.statusCode, range).toBe(200);
      expect(res.rawPayload).toEqual(bytes);
    }
  });
});
