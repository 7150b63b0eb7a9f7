import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { RequestContext } from './context.ts';
import { resolveMembership } from './context.ts';
import { assertUrlParts } from './validation.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What the handler refuses whatever the body says, for a route whose path names an entity: it must
     * exist for the caller (else 404, as a valid body would get) and the caller may act on it (403).
     * Called with the call's context and path parameters only when the body fails validation, so that a
     * bad body to another organization's entity answers 404, not 422 (docs/errors.md, order of checks).
     * Throws the handler's own error; its result is ignored.
     */
    exists?: (ctx: RequestContext, params: Record<string, string>) => Promise<unknown>;
  }
}

/**
 * Authorization and existence come before the body's validation on every route. Fastify validates the
 * body before any preHandler, so /api routes with a body schema keep a failed validation on the request
 * (`attachValidation`) instead of answering it; the route's first preHandler then answers a failure of
 * the path or query as before, and for a failure of the body first checks what a valid body would meet: the
 * query string (which Fastify leaves unvalidated after a bad body), an explicit `organization_uid`, the
 * caller's role for the route's scope and the organization's second-factor rule (`request.tenant`),
 * and the route's `exists` — then answers the 422. (The global preHandler that checks an explicit
 * `organization_uid`, src/app.ts, leaves a request with a failed validation to this one.)
 */
export function registerCheckOrder(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith('/api/') || route.schema?.body === undefined) return;
    route.attachValidation = true;
    // First of the route's own preHandlers (idempotency's come after); routes without a body schema,
    // most reads among them, pay nothing.
    const own = route.preHandler === undefined ? [] : [route.preHandler].flat();
    route.preHandler = [answerFailedValidation, ...own] as typeof route.preHandler;
  });
}

function answerFailedValidation(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (error?: Error) => void,
): void {
  const failed = request.validationError as (Error & { validationContext?: string }) | undefined;
  if (!failed) {
    done();
    return;
  }
  if (failed.validationContext !== 'body') {
    done(failed);
    return;
  }
  checksBeforeBody(request).then(
    () => done(failed),
    (error: unknown) => done(error as Error),
  );
}

async function checksBeforeBody(request: FastifyRequest): Promise<void> {
  assertUrlParts(request);
  const principal = request.principal;
  if (!principal) return;
  const query = request.query as { organization_uid?: string } | undefined;
  if (query?.organization_uid) resolveMembership(principal, query.organization_uid);
  const config = request.routeOptions.config;
  if (!config.scope) return;
  const params = (request.params ?? {}) as Record<string, string>;
  const ctx = request.tenant(params.organization_uid ?? query?.organization_uid);
  await config.exists?.(ctx, params);
}
