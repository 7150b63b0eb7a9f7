import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageUploadOrigin } from '../../src/platform/storage/create-storage.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';

/**
 * The console's static files at /app (src/platform/http/console.ts, docs/console.md): caching, the
 * console's own Content-Security-Policy, client routes, the emailed links' redirects, and a missing build.
 * The browser tests (test/e2e, `npm run test:e2e`) use the real build; these use a small one of their own.
 */
let t: TestApp;
let unbuilt: TestApp;
let build: string;
const SCRIPT = 'console.0a1b2c3d.js';

beforeAll(async () => {
  build = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-console-'));
  fs.mkdirSync(path.join(build, 'assets'));
  fs.writeFileSync(
    path.join(build, 'index.html'),
    `<!doctype html><html><head><script type="module" src="/app/assets/${SCRIPT}"></script></head><body></body></html>`,
  );
  const script = 'console.log("the console");';
  fs.writeFileSync(path.join(build, 'assets', SCRIPT), script);
  fs.writeFileSync(path.join(build, 'assets', `${SCRIPT}.br`), zlib.brotliCompressSync(script));
  t = await createTestApp({ consoleDir: build });
  unbuilt = await createTestApp({ consoleDir: path.join(build, 'missing') });
});
afterAll(async () => {
  await t?.close();
  await unbuilt?.close();
  fs.rmSync(build, { recursive: true, force: true });
});

const get = (app: TestApp, url: string, headers: Record<string, string> = {}) =>
  app.app.inject({ method: 'GET', url, headers });

describe('the console at /app', () => {
  it('serves index.html for /app and every client route, revalidated on each load, with no key', async () => {
    for (const url of ['/app', '/app/', '/app/inbox', '/app/inbox/5d0c3f1e-8a4b-4c1e-9f3a-2b7d6e5c4a31']) {
      const res = await get(t, url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.body).toContain(SCRIPT);
    }
  });

  it('hashed assets are cached for a year, and sent compressed to a browser that accepts it', async () => {
    const plain = await get(t, `/app/assets/${SCRIPT}`);
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-type']).toContain('javascript');
    expect(plain.body).toBe('console.log("the console");');
    const br = await get(t, `/app/assets/${SCRIPT}`, { 'accept-encoding': 'gzip, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toContain('accept-encoding');
    expect(zlib.brotliDecompressSync(br.rawPayload).toString()).toBe(plain.body);
  });

  it('a missing asset is a 404, never the page; a write is a 405', async () => {
    expectErrorBody(await call(t.app, 'GET', '/app/assets/gone.0a1b2c3d.js'), 404, 'not_found');
    const post = await call(t.app, 'POST', '/app/inbox', { body: {} });
    expectErrorBody(post, 405, 'method_not_allowed');
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it("has a strict policy of its own (no inline script or style); the API keeps the docs' policy", async () => {
    const csp = String((await get(t, '/app/inbox')).headers['content-security-policy']);
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'self'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(String((await get(t, '/docs/')).headers['content-security-policy'])).toContain(
      "style-src 'self' 'unsafe-inline'",
    );
    expect((await get(t, '/app')).headers['x-frame-options']).toBe('DENY');
  });

  it("connect-src allows object storage's origin: the service's own, or the S3 endpoint uploads go to", async () => {
    const csp = String((await get(t, '/app/inbox')).headers['content-security-policy']);
    expect(csp).toContain(`connect-src 'self' ${new URL(t.deps.config.publicBaseUrl).origin};`);
    const s3 = await createTestApp({
      consoleDir: build,
      env: { S3_ENDPOINT: 'https://minio.files.example:9000/', S3_BUCKET: 'remit', S3_REGION: 'eu-west-1' },
    });
    try {
      const header = String((await get(s3, '/app/knowledge')).headers['content-security-policy']);
      expect(header).toContain("connect-src 'self' https://minio.files.example:9000;");
    } finally {
      await s3.close();
    }
    expect(
      storageUploadOrigin({
        publicBaseUrl: 'http://localhost:3000',
        objectStorage: { kind: 's3', endpoint: undefined, bucket: 'b', region: 'eu-west-1' } as never,
      }),
    ).toBe('https://s3.eu-west-1.amazonaws.com');
  });

  it('the links Remit emails open the console, token kept', async () => {
    for (const page of ['/reset-password', '/accept-invitation', '/sign-in-link', '/approval']) {
      const res = await get(t, `${page}?token=abc_DEF-123.sig`);
      expect(res.statusCode).toBe(302);
      expect(res.headers.location).toBe(`/app${page}?token=abc_DEF-123.sig`);
    }
  });

  it('is not part of the API document', async () => {
    const doc = (await get(t, '/api/openapi.json')).json<{ paths: Record<string, unknown> }>();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/app') || p === '/reset-password')).toEqual([]);
  });

  it('without a build, /app says how to make one', async () => {
    const res = await call(unbuilt.app, 'GET', '/app/inbox');
    expect(expectErrorBody(res, 404, 'not_found').message).toContain('npm run build');
  });
});
