import { beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/modules/api-keys/api-key-format.ts';
import { SCOPES, type Scope } from '../../src/platform/http/scopes.ts';
import type { TestApp } from './app.ts';
import { call, expectErrorBody } from './http.ts';
import type { Principals } from './principals.ts';

export interface RouteUnderTest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The route's address with an entity of orgA (or no entity). */
  url: (env: RouteEnv) => string | Promise<string>;
  body?: (env: RouteEnv) => unknown;
  /** The scope the route needs; a key holding every other scope must get 403. */
  scope?: Scope;
  /** The same route naming an entity of orgB: orgA's admin must get 404 (never 403 or data). */
  foreignUrl?: (env: RouteEnv) => string | Promise<string>;
  /** The same route with `organization_uid` of orgB given explicitly: orgA's admin must get 403. */
  foreignOrganizationUrl?: (env: RouteEnv) => string | Promise<string>;
  foreignOrganizationBody?: (env: RouteEnv) => unknown;
}

export interface RouteEnv {
  t: TestApp;
  p: Principals;
}

/**
 * The checks every authenticated route must pass (STYLE.md, Unkey's "common route tests"): no key,
 * a malformed header, an unknown key → 401 in the one error body; a key without the route's scope →
 * 403; another organization's entity → 404; another organization named explicitly → 403.
 */
export function commonRouteChecks(name: string, route: RouteUnderTest, getEnv: () => RouteEnv) {
  describe(`${name}: common route checks`, () => {
    let env: RouteEnv;
    beforeAll(() => {
      env = getEnv();
    });
    const send = async (
      key: string | undefined,
      headers: Record<string, string> = {},
      url?: string,
      body?: unknown,
    ) =>
      call(env.t.app, route.method, url ?? (await route.url(env)), {
        key,
        headers,
        ...(route.body || body !== undefined ? { body: body ?? route.body!(env) } : {}),
      });

    it('401 without an Authorization header', async () => {
      expectErrorBody(await send(undefined), 401, 'unauthorized');
    });

    it('401 when the header is not "Bearer " and one space before the key', async () => {
      const key = env.p.orgA.admin.key;
      for (const header of [
        `bearer ${key}`,
        `Bearer  ${key}`,
        `Basic ${key}`,
        key,
        `Bearer`,
        `Bearer ${key} x`,
      ]) {
        expectErrorBody(await send(undefined, { authorization: header }), 401, 'unauthorized');
      }
    });

    it('401 for a key that does not exist, and for a mistyped one', async () => {
      expectErrorBody(await send(generateApiKey()), 401, 'unauthorized');
      const key = env.p.orgA.admin.key;
      expectErrorBody(await send(key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a')), 401, 'unauthorized');
    });

    if (route.scope) {
      const scope = route.scope;
      it(`403 for a key without ${scope}`, async () => {
        const others = SCOPES.filter((s) => s !== scope && s !== 'agents:token_usage');
        const key = await env.p.keyWithScopes(others);
        const result = await send(key);
        expectErrorBody(result, 403);
        expect(result.body.message).toContain(scope);
      });
    }

    if (route.foreignUrl) {
      it("404 for another organization's entity", async () => {
        const result = await send(env.p.orgA.admin.key, {}, await route.foreignUrl!(env));
        expectErrorBody(result, 404);
      });
    }

    if (route.foreignOrganizationUrl || route.foreignOrganizationBody) {
      it('403 when naming an organization the caller is not a member of', async () => {
        const url = route.foreignOrganizationUrl ? await route.foreignOrganizationUrl(env) : undefined;
        const body = route.foreignOrganizationBody ? route.foreignOrganizationBody(env) : undefined;
        expectErrorBody(await send(env.p.orgA.admin.key, {}, url, body), 403);
      });
    }
  });
}
