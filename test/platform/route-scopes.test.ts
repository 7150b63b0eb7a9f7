import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeRuleProblems, UNSCOPED_ROUTES, type RouteAccess } from '../../src/platform/http/route-rules.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * The scope rule (docs/authentication.md#routes-without-a-scope): every /api route that takes a
 * credential declares the scope a key needs, or is on the documented list of routes that need none,
 * with the reason. The app refuses to start otherwise (src/app.ts); here the rule itself, the app's
 * routes against it, the list against the document, and every declared scope enforced for real.
 */

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

describe('the rule', () => {
  const listed = Object.keys(UNSCOPED_ROUTES).map((name): RouteAccess => {
    const [method, url] = name.split(' ') as [string, string];
    return { method, url: url.replace(/\{(\w+)\}/g, ':$1') };
  });

  it('refuses an /api route that takes a credential, declares no scope and is not listed', () => {
    const routes: RouteAccess[] = [
      ...listed,
      { method: 'PATCH', url: '/api/organization/:organization_uid/settings' },
      { method: 'GET', url: '/api/invitations/:token/preview' },
    ];
    expect(scopeRuleProblems(routes)).toEqual({
      undeclared: [
        'PATCH /api/organization/{organization_uid}/settings',
        'GET /api/invitations/{token}/preview',
      ],
      stale: [],
    });
  });

  it('accepts a scoped route, a public one, routes outside /api, and HEAD (its GET decides)', () => {
    const routes: RouteAccess[] = [
      ...listed,
      { method: 'PATCH', url: '/api/organization/:organization_uid/settings', scope: 'organization:write' },
      { method: 'POST', url: '/api/auth/sign-in', public: true },
      { method: 'GET', url: '/healthz' },
      { method: 'GET', url: '/app/*' },
      { method: 'HEAD', url: '/api/organization/:organization_uid/settings' },
    ];
    expect(scopeRuleProblems(routes)).toEqual({ undeclared: [], stale: [] });
  });

  it('names a listed route that is gone, public, or scoped by now', () => {
    const routes = listed.map((route) =>
      route.url === '/api/me'
        ? { ...route, scope: 'search:read' }
        : route.url === '/api/auth/session'
          ? { ...route, public: true }
          : route,
    );
    expect(scopeRuleProblems(routes.filter((r) => r.url !== '/api/auth/password')).stale).toEqual([
      'GET /api/me',
      'GET /api/auth/session',
      'POST /api/auth/password',
    ]);
  });
});

describe("the app's routes", () => {
  it('every authenticated /api route declares a scope or is listed, and every listed route exists unscoped', () => {
    expect(scopeRuleProblems(t.app.routeList)).toEqual({ undeclared: [], stale: [] });
  });

  it('the list is the one docs/authentication.md shows, each with its reason', () => {
    const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/authentication.md'), 'utf8');
    const start = doc.indexOf('### Routes without a scope');
    expect(start).toBeGreaterThan(0);
    const section = doc.slice(start, doc.indexOf('\n#', start + 1));
    const rows = [
      ...section.matchAll(/^\|\s*`((?:GET|POST|PUT|PATCH|DELETE) [^`]+)`\s*\|\s*([^|]*?)\s*\|/gm),
    ].map((m) => m[1]!);
    expect(rows).toEqual(Object.keys(UNSCOPED_ROUTES));
    for (const reason of Object.values(UNSCOPED_ROUTES)) expect(reason.length).toBeGreaterThan(10);
  });

  it('every scoped route refuses a key without its scope: 403 missing_scope naming it, before anything runs', async () => {
    const concrete = (url: string) =>
      url.replace(/:(\w+)/g, (_, name: string) => {
        if (name === 'organization_uid') return p.orgA.uid;
        if (name === 'context_type') return 'ORGANIZATION';
        return crypto.randomUUID();
      });
    const searchOnly = await p.keyWithScopes(['search:read']);
    const keysOnly = await p.keyWithScopes(['api_keys:read']);
    const scoped = t.app.routeList.filter((r) => r.url.startsWith('/api/') && r.scope && r.method !== 'HEAD');
    expect(scoped.length).toBeGreaterThan(90);
    const problems: string[] = [];
    for (const route of scoped) {
      const res = await call(t.app, route.method, concrete(route.url), {
        key: route.scope === 'search:read' ? keysOnly : searchOnly,
      });
      if (res.status !== 403 || res.body?.code !== 'missing_scope') {
        problems.push(`${route.method} ${route.url}: ${res.status} ${res.raw.slice(0, 200)}`);
        continue;
      }
      expectErrorBody(res, 403, 'missing_scope');
      if (res.body.message !== `This API key lacks the ${route.scope} scope`) {
        problems.push(`${route.method} ${route.url}: ${res.body.message}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
