import type { RouteOptions } from 'fastify';
import { MAX_PAGE } from './pagination.ts';
import { Uuid } from './schemas.ts';

/**
 * Body limits in bytes. Every JSON route gets `DEFAULT` unless it declares a larger `bodyLimit` that
 * fits what it stores (docs/errors.md lists them); multipart uploads have their own file limits.
 */
export const BODY_LIMITS = {
  /** Most bodies: names, amounts, settings, filters. */
  DEFAULT: 64 * 1024,
  /** Rich bodies: up to 100 line items, agent instructions, tool arguments, email text. */
  LARGE: 512 * 1024,
  /** A whole received email (inbound mail, conversation messages). */
  MESSAGE: 2 * 1024 * 1024,
} as const;

type Schema = Record<string, unknown> & { properties?: Record<string, unknown> };

/**
 * The query-string rules every API route shares, applied when the route is registered so no route can
 * forget them: an unknown parameter is refused (400 `unknown_parameter`, as Stripe does: a typo such as
 * `sort=` for `sort_by=` must not silently return unfiltered data); `organization_uid` is accepted
 * everywhere because clients send it by habit; `page` is bounded by MAX_PAGE.
 */
export function applyQueryRules(route: RouteOptions): void {
  if (!route.url.startsWith('/api/')) return;
  const schema = (route.schema ??= {});
  const given = schema.querystring as Schema | undefined;
  if (given && given.type !== 'object') {
    throw new Error(`${route.method} ${route.url}: the querystring schema must be an object`);
  }
  const properties: Record<string, unknown> = { ...(given?.properties ?? {}) };
  properties.organization_uid ??= Uuid;
  const page = properties.page as Schema | undefined;
  if (page && page.maximum === undefined) properties.page = { ...page, maximum: MAX_PAGE };
  // A fresh object: query schemas are shared between routes (pageQuery), and mutating one would
  // change the others.
  schema.querystring = {
    ...(given ?? { type: 'object' }),
    type: 'object',
    properties,
    additionalProperties: false,
  };
}

/**
 * The /api routes that take a credential but declare no scope, each with the reason
 * (docs/authentication.md#routes-without-a-scope shows the same list). Every other /api route that takes
 * a credential declares `config.scope`, so a key with scopes reaches only what they name:
 * `scopeRuleProblems` finds one that does not, and the app then refuses to start (src/app.ts). Public
 * routes (`config.public`) read no credential at all and are not listed; routes that take one optionally
 * (`config.optionalAuth`) are. Written as the role matrix writes routes: `METHOD /api/path/{param}`.
 */
export const UNSCOPED_ROUTES: Readonly<Record<string, string>> = {
  'GET /api/me': "who is calling: the caller's own user, memberships and the key's scopes",
  'POST /api/auth/sign-out': 'a sign-in session only: with a key 403 session_required',
  'GET /api/auth/session': 'a sign-in session only: with a key 403 session_required',
  'GET /api/auth/sessions': 'a sign-in session only: with a key 403 session_required',
  'DELETE /api/auth/sessions/{uid}': 'a sign-in session only: with a key 403 session_required',
  'POST /api/auth/sessions/revoke-all': 'a sign-in session only: with a key 403 session_required',
  'POST /api/auth/password': 'a sign-in session only: with a key 403 session_required',
  'POST /api/auth/totp/setup': 'a sign-in session only: with a key 403 session_required',
  'POST /api/auth/totp/enable': 'a sign-in session only: with a key 403 session_required',
  'POST /api/auth/totp/disable': 'a sign-in session only: with a key 403 session_required',
  'GET /api/invitations/{token}': 'the emailed token is the credential; a key is optional (optionalAuth)',
  'POST /api/invitations/accept': 'the emailed token is the credential; a key is optional (optionalAuth)',
};

/** What the scope rule reads of a registered route. */
export interface RouteAccess {
  method: string;
  url: string;
  public?: boolean | undefined;
  scope?: string | undefined;
}

/** `/api/invoices/:uid` → `/api/invoices/{uid}`, as the role matrix and UNSCOPED_ROUTES write it. */
const templateOf = (url: string) => url.replace(/:(\w+)/g, '{$1}');

/**
 * The scope rule over the app's routes: `undeclared`, every /api route that takes a credential but
 * declares no scope and is not in UNSCOPED_ROUTES (the app refuses to start with one, src/app.ts);
 * `stale`, every entry of UNSCOPED_ROUTES that is no such route (gone, public, or scoped by now; the
 * test suite refuses those). HEAD routes follow their GET.
 */
export function scopeRuleProblems(routes: readonly RouteAccess[]): { undeclared: string[]; stale: string[] } {
  const undeclared: string[] = [];
  const unscoped = new Set<string>();
  for (const route of routes) {
    const method = route.method.toUpperCase();
    if (method === 'HEAD' || !route.url.startsWith('/api/') || route.public || route.scope) continue;
    const name = `${method} ${templateOf(route.url)}`;
    unscoped.add(name);
    if (UNSCOPED_ROUTES[name] === undefined) undeclared.push(name);
  }
  const stale = Object.keys(UNSCOPED_ROUTES).filter((name) => !unscoped.has(name));
  return { undeclared, stale };
}
