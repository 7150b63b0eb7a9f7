import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

let plain: TestApp;
let proxied: TestApp;
let p: Principals;

beforeAll(async () => {
  plain = await createTestApp();
  p = await createPrincipals(plain);
  proxied = await createTestApp({
    env: { TRUST_PROXY: 'true', CORS_ORIGINS: 'https://console.example.com,http://localhost:5173' },
  });
});
afterAll(async () => {
  await plain?.close();
  await proxied?.close();
});

describe('security headers on every response', () => {
  it.each([
    ['an API answer', '/api/me', true],
    ['an error', '/api/no-such-route', false],
    ['a public route', '/healthz', false],
    ['the API docs page', '/docs/', false],
  ])('%s', async (_label, url, authed) => {
    const res = await plain.app.inject({
      method: 'GET',
      url,
      headers: authed ? { authorization: `Bearer ${p.orgA.admin.key}` } : {},
    });
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    // Plain HTTP: never tell a browser to insist on HTTPS.
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });

  it('API answers are not to be stored, the new key above all; a route with its own policy keeps it', async () => {
    const made = await plain.app.inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: { authorization: `Bearer ${p.orgA.admin.key}` },
      payload: { name: 'shown once', organization_uid: p.orgA.uid },
    });
    expect(made.statusCode).toBe(200);
    expect(made.json().data.key).toEqual(expect.any(String));
    expect(made.headers['cache-control']).toBe('no-store');
    for (const url of ['/api/me', '/api/no-such-route']) {
      const res = await plain.app.inject({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${p.orgA.admin.key}` },
      });
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const docs = await plain.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.headers['cache-control']).not.toBe('no-store');
  });

  it('the docs page satisfies the policy: every script is a same-origin file, no inline code', async () => {
    const res = await plain.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    const scripts = [...res.body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/src="\.?\/(docs\/)?static\//);
      expect(body!.trim()).toBe('');
    }
    expect(res.body).not.toMatch(/\son[a-z]+=/i);
  });
});

describe('HSTS over HTTPS only', () => {
  it('sent when a trusted proxy says the request came over HTTPS', async () => {
    const res = await proxied.app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
  });

  it('not sent when an untrusted client claims HTTPS (TRUST_PROXY off)', async () => {
    const res = await plain.app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });
});

describe('CORS', () => {
  const preflight = (app: TestApp, origin: string) =>
    app.app.inject({
      method: 'OPTIONS',
      url: '/api/invoices',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    });

  const getFrom = (app: TestApp, origin: string) =>
    app.app.inject({ method: 'GET', url: '/healthz', headers: { origin } });

  it('off by default: no origin is allowed', async () => {
    const res = await preflight(plain, 'https://console.example.com');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const get = await getFrom(plain, 'https://console.example.com');
    expect(get.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('CORS_ORIGINS allows exactly the listed origins, without credentials', async () => {
    const allowed = await preflight(proxied, 'https://console.example.com');
    expect(allowed.statusCode).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://console.example.com');
    expect(String(allowed.headers['access-control-allow-headers']).toLowerCase()).toContain(
      'idempotency-key',
    );
    expect(allowed.headers['access-control-allow-credentials']).toBeUndefined();
    const other = await preflight(proxied, 'https://evil.example.com');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const get = await getFrom(proxied, 'http://localhost:5173');
    expect(get.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(String(get.headers['access-control-expose-headers'])).toContain('X-Request-Id');
  });

  it.each(['*', 'https://app.example.com/path', 'app.example.com', 'ftp://x.example.com'])(
    'CORS_ORIGINS=%s is refused at start',
    (value) => {
      expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(ConfigError);
    },
  );
});
