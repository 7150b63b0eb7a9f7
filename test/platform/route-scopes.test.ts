import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeRuleProblems, UNSCOPED_ROUTES, type RouteAccess } from '../../src/platform/http/route-rules.ts';
import { isAdminOnly, type Scope } from '../../src/platform/http/scopes.ts';
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

describe('the order of checks: authorization and existence before the body', () => {
  /** A body no route's schema accepts: every body is an object (a few an object or an array). */
  const BAD_BODY = '"not an object"';
  const send = (method: string, url: string, key: string) =>
    call(t.app, method, url, { key, body: BAD_BODY, headers: { 'content-type': 'application/json' } });

  /** Every /api route with a JSON body schema that takes a credential, as the OpenAPI document lists them. */
  async function routesWithBodies() {
    const doc = (await call(t.app, 'GET', '/api/openapi.json')).body as {
      paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>>;
    };
    const scopes = new Map(
      t.app.routeList.map((r) => [`${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`, r.scope]),
    );
    return Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, op]) => op.requestBody?.content?.['application/json'] !== undefined)
        .map(([method]) => ({
          method: method.toUpperCase(),
          path,
          scope: scopes.get(`${method.toUpperCase()} ${path}`),
        }))
        .filter((r) => r.path.startsWith('/api/') && r.scope !== undefined),
    );
  }

  /** The path with orgA as its organization and `entity` for every other parameter. */
  const fill = (path: string, entity: () => string, organizationUid = p.orgA.uid) =>
    path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (name === 'organization_uid') return organizationUid;
      if (name === 'context_type') return 'PARTY';
      if (name === 'metric_uid') return 'no_such_metric';
      return entity();
    });

  it('an entity that is not there (or is another organization’s) with a bad body: 404, on every route whose path names one', async () => {
    const routes = (await routesWithBodies()).filter((r) => /\{(?!organization_uid\})\w+\}/.test(r.path));
    expect(routes.length).toBeGreaterThan(25);
    const problems: string[] = [];
    for (const route of routes) {
      const res = await send(
        route.method,
        fill(route.path, () => crypto.randomUUID()),
        p.orgA.admin.key,
      );
      if (res.status !== 404 || res.body?.code !== 'not_found')
        problems.push(`${route.method} ${route.path}: ${res.status} ${res.raw.slice(0, 160)}`);
    }
    expect(problems).toEqual([]);
  });

  it('another organization named in the path, a key without the scope, a member on an admin-only route: 403 before the body', async () => {
    const routes = await routesWithBodies();
    const member = p.orgA.member.key;
    const problems: string[] = [];
    for (const route of routes) {
      const uid = crypto.randomUUID();
      const expectations: [string, string, string][] = [
        [
          fill(route.path, () => uid),
          await p.keyWithScopes(route.scope === 'search:read' ? ['api_keys:read'] : ['search:read']),
          'missing_scope',
        ],
      ];
      if (route.path.includes('{organization_uid}'))
        expectations.push([fill(route.path, () => uid, p.orgB.uid), p.orgA.admin.key, 'not_a_member']);
      if (isAdminOnly(route.scope as Scope))
        expectations.push([fill(route.path, () => uid), member, 'missing_scope']);
      for (const [url, key, code] of expectations) {
        const res = await send(route.method, url, key);
        if (res.status !== 403 || res.body?.code !== code)
          problems.push(`${route.method} ${url} (${code}): ${res.status} ${res.raw.slice(0, 160)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('another organization’s approval policy, webhook endpoint and metric entity with a bad body: 404', async () => {
    const orgB = p.orgB.admin.key;
    const policy = await call(t.app, 'POST', '/api/approval-policies', {
      key: orgB,
      body: { name: 'B policy', approver_roles: ['admin'] },
    });
    expect(policy.status, policy.raw).toBe(201);
    const party = await call(t.app, 'POST', '/api/parties', {
      key: orgB,
      body: { name: 'B client', role: 'client' },
    });
    expect(party.status, party.raw).toBe(201);
    const endpoint = await call(t.app, 'POST', `/api/organization/${p.orgB.uid}/webhook-endpoints`, {
      key: orgB,
      body: { url: 'http://127.0.0.1:9/hook' },
    });
    expect(endpoint.status, endpoint.raw).toBe(201);
    const admin = p.orgA.admin.key;
    for (const [method, url] of [
      ['PATCH', `/api/approval-policies/${policy.body.data.uid}`],
      ['POST', `/api/metrics/values/PARTY/${party.body.data.uid}`],
      ['PATCH', `/api/organization/${p.orgA.uid}/webhook-endpoints/${endpoint.body.data.uid}`],
    ] as const) {
      expectErrorBody(await send(method, url, admin), 404, 'not_found');
    }
    // Another organization's endpoint under its own organization's path: not a member.
    expectErrorBody(
      await send(
        'PATCH',
        `/api/organization/${p.orgB.uid}/webhook-endpoints/${endpoint.body.data.uid}`,
        admin,
      ),
      403,
      'not_a_member',
    );
    // The caller's own entity with the same body: the body's 422.
    const own = await call(t.app, 'POST', '/api/approval-policies', {
      key: admin,
      body: { name: 'A policy', approver_roles: ['admin'] },
    });
    expectErrorBody(
      await send('PATCH', `/api/approval-policies/${own.body.data.uid}`, admin),
      422,
      'validation_failed',
    );
  });
});
