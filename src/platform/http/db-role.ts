import type { FastifyInstance, FastifyRequest } from 'fastify';
import { runWithRole, unauthenticatedRole, type RoleHolder } from '../db/session-role.ts';
import type { Principal } from './context.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The database role this request's statements run as (docs/security.md#row-level-security). */
    dbRole: RoleHolder;
  }
}

/**
 * Every request runs as the tenant role from its first hook, seeing no tenant row until authentication
 * names the caller's organizations. Entered again after the body is read: the body arrives on the
 * socket's own events, outside the context the first hook opened.
 */
export function registerDbRole(app: FastifyInstance): void {
  app.decorateRequest('dbRole', null as unknown as RoleHolder);
  app.addHook('onRequest', (request, _reply, done) => {
    request.dbRole = unauthenticatedRole();
    runWithRole(request.dbRole, done);
  });
  app.addHook('preValidation', (request, _reply, done) => {
    runWithRole(request.dbRole, done);
  });
}

/**
 * The caller's organizations: all of them, because a request may name any organization it belongs to
 * (interface 4.4), and the credential's own, which its idempotency records belong to.
 */
export function narrowToCaller(request: FastifyRequest, principal: Principal): void {
  const organizationUids = new Set(principal.memberships.map((m) => m.organizationUid));
  if (principal.credential.organizationUid) organizationUids.add(principal.credential.organizationUid);
  request.dbRole.role = { kind: 'tenant', organizationUids: [...organizationUids] };
}
