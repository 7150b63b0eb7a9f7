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
