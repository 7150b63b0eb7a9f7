import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApiDocs, type SwaggerUiPlugin } from '../../src/platform/http/api-docs.ts';
import { registerErrorHandling } from '../../src/platform/http/error-handler.ts';
import type { App } from '../../src/platform/http/types.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';

/**
 * The human API docs at /docs (src/platform/http/api-docs.ts): Swagger UI is loaded on the first request
 * into an instance of its own, and every page and file answers through the app as when Swagger UI was
 * registered on the app itself.
 */
const staticDir = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@fastify/swagger-ui/package.json')),
  'static',
);
const staticFile = (name: string) => fs.readFileSync(path.join(staticDir, name));

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const get = (url: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'GET', url, headers });

describe('the docs at /docs', () => {
  it('the page, with and without the trailing slash, links files that all answer', async () => {
    for (const [url, prefix] of [
      ['/docs/', './static/'],
      ['/docs', '/docs/static/'],
    ] as const) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).toContain('<div id="swagger-ui"></div>');
      const links = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      expect(links.length).toBeGreaterThan(4);
      for (const link of links) {
        expect(link.startsWith(prefix), link).toBe(true);
        const file = await get(`/docs/static/${link.slice(prefix.length)}`);
        expect(file.statusCode, link).toBe(200);
      }
    }
  });

  it("Swagger UI's files are served as they are, with their content type and caching", async () => {
    for (const [name, type] of [
      ['swagger-ui.css', 'text/css; charset=utf-8'],
      ['swagger-ui-bundle.js', 'application/javascript; charset=utf-8'],
      ['favicon-32x32.png', 'image/png'],
    ] as const) {
      const res = await get(`/docs/static/${name}`);
      expect(res.statusCode, name).toBe(200);
      expect(res.headers['content-type']).toBe(type);
      expect(res.rawPayload.equals(staticFile(name)), name).toBe(true);
      expect(res.headers['content-length']).toBe(String(staticFile(name).length));
      expect(res.headers['etag']).toEqual(expect.any(String));
      expect(res.headers['cache-control']).toBe('public, max-age=0');
    }
    // A conditional request and a range are answered by @fastify/static as before.
    const css = await get('/docs/static/swagger-ui.css');
    const again = await get('/docs/static/swagger-ui.css', { 'if-none-match': String(css.headers.etag) });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    const part = await get('/docs/static/swagger-ui.css', { range: 'bytes=0-99' });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 0-99/${staticFile('swagger-ui.css').length}`);
    expect(part.rawPayload.equals(staticFile('swagger-ui.css').subarray(0, 100))).toBe(true);
  });

  it('the initializer carries the UI settings and reads ./json', async () => {
    const res = await get('/docs/static/swagger-initializer.js');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.body).toMatch(/"docExpansion":\s*"list"/);
    expect(res.body).toContain("resolveUrl('./json')");
  });

  it('/docs/static/index.html redirects to the page', async () => {
    const res = await get('/docs/static/index.html');
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/docs/');
    expect(res.headers['content-type']).toBeUndefined();
    expect(res.body).toBe('');
  });

  it('/docs/json and /docs/yaml are the OpenAPI document the API serves', async () => {
    const document = await get('/api/openapi.json');
    expect(document.statusCode).toBe(200);
    const json = await get('/docs/json');
    expect(json.statusCode).toBe(200);
    expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json.json()).toEqual(document.json());
    const yaml = await get('/docs/yaml');
    expect(yaml.statusCode).toBe(200);
    expect(yaml.headers['content-type']).toBe('application/x-yaml');
    expect(yaml.body.startsWith('openapi: 3.1.0\n')).toBe(true);
    for (const route of Object.keys((document.json() as { paths: object }).paths)) {
      expect(yaml.body).toContain(`\n  ${route}:\n`);
    }
  });

  it('a file that is not there, and paths Swagger UI does not serve, answer the one error body', async () => {
    const missing = await call(t.app, 'GET', '/docs/static/nope.js');
    expect(expectErrorBody(missing, 404, 'not_found').message).toBe(
      '/docs/static/nope.js is not a page or file of the API docs',
    );
    // Not routes of this Swagger UI: the app's own 404, as for any unknown path.
    for (const url of ['/docs/uiConfig', '/docs/initOAuth', '/docs/nope']) {
      expect(expectErrorBody(await call(t.app, 'GET', url), 404, 'route_not_found').message).toBe(
        `No route GET ${url}`,
      );
    }
    const post = await call(t.app, 'POST', '/docs/json');
    expectErrorBody(post, 405, 'method_not_allowed');
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('HEAD answers the headers of the GET without the body', async () => {
    const res = await t.app.inject({ method: 'HEAD', url: '/docs/static/swagger-ui.css' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(res.headers['content-length']).toBe(String(staticFile('swagger-ui.css').length));
    expect(res.body).toBe('');
  });

  it("public, with the app's security headers and request id, never counted against a rate limit", async () => {
    const api = await get('/healthz');
    for (const url of ['/docs/', '/docs/static/swagger-ui.css', '/docs/static/index.html', '/docs/json']) {
      // A credential that would be refused elsewhere is not even read.
      const res = await get(url, { authorization: 'Bearer rk_live_not_a_key' });
      expect(res.statusCode, url).toBeLessThan(400);
      expect(res.headers['content-security-policy'], url).toBe(api.headers['content-security-policy']);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-request-id']).toEqual(expect.any(String));
      expect(res.headers['ratelimit-limit']).toBeUndefined();
      // Hop-by-hop headers of the inner answer are not passed on.
      expect(res.headers['transfer-encoding']).toBeUndefined();
    }
  });

  it('the docs routes are left out of the OpenAPI document', async () => {
    const paths = Object.keys((await get('/api/openapi.json')).json<{ paths: object }>().paths);
    expect(paths.filter((p) => p.startsWith('/docs'))).toEqual([]);
    expect(t.app.routeList.filter((r) => r.url.startsWith('/docs')).every((r) => r.public)).toBe(true);
  });

  it('a first burst of concurrent requests is answered in full', async () => {
    // A fresh instance: Swagger UI is not loaded in it yet.
    const fresh = await secondInstance(t);
    try {
      const urls = [
        '/docs/',
        '/docs',
        '/docs/static/index.html',
        '/docs/static/swagger-ui.css',
        '/docs/static/swagger-initializer.js',
        '/docs/json',
        '/docs/yaml',
        '/docs/static/nope.js',
      ];
      const answers = await Promise.all(
        [...urls, ...urls].map((url) => fresh.app.inject({ method: 'GET', url })),
      );
      expect(answers.map((res) => res.statusCode)).toEqual(
        [...urls, ...urls].map((url) =>
          url.endsWith('index.html') ? 302 : url.endsWith('nope.js') ? 404 : 200,
        ),
      );
      expect(answers[3]!.rawPayload.equals(staticFile('swagger-ui.css'))).toBe(true);
      expect(answers[5]!.json()).toEqual((await get('/docs/json')).json());
    } finally {
      await fresh.close();
    }
  });
});

describe('loading Swagger UI', () => {
  /** A small app with the docs module and a loader that counts its calls and can be made to fail. */
  async function docsApp(loader: { calls: number; failures: number }) {
    const app = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
    registerErrorHandling(app);
    await app.register(swagger, { openapi: { info: { title: 'Small', version: '1' } } });
    app.get('/ping', { schema: { summary: 'Ping' } }, async () => ({ ok: true }));
    registerApiDocs(app, {
      loadSwaggerUi: async () => {
        loader.calls += 1;
        if (loader.failures > 0) {
          loader.failures -= 1;
          throw new Error('Swagger UI could not be loaded');
        }
        return (await import('@fastify/swagger-ui')).default as SwaggerUiPlugin;
      },
    });
    await app.ready();
    return app;
  }

  let app: FastifyInstance | undefined;
  afterAll(async () => app?.close());

  it('not at start; once for a burst of first requests; a failed load is tried again', async () => {
    const loader = { calls: 0, failures: 1 };
    app = await docsApp(loader);
    expect(loader.calls).toBe(0);

    // The load fails: the waiting requests answer 500 in the one error body, and nothing is kept.
    const failed = await Promise.all([1, 2, 3].map(() => call(app as unknown as App, 'GET', '/docs/json')));
    for (const res of failed) expectErrorBody(res, 500, 'internal_error');
    expect(loader.calls).toBe(1);

    const burst = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        app!.inject({ method: 'GET', url: i % 2 ? '/docs/json' : '/docs/static/swagger-ui.css' }),
      ),
    );
    expect(burst.map((res) => res.statusCode)).toEqual(Array(10).fill(200));
    expect(burst[1]!.json()).toMatchObject({ info: { title: 'Small' }, paths: { '/ping': {} } });
    expect(loader.calls).toBe(2);
    expect((await app.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(200);
    expect(loader.calls).toBe(2);
  });
});
