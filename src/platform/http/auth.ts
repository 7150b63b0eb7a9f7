import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Scope } from './scopes.ts';
import { keyAllows, roleAllows } from './scopes.ts';
import { setLogFields } from '../logging.ts';
import {
  contextFor,
  resolveMembership,
  type CallOrigin,
  type Principal,
  type RequestContext,
} from './context.ts';
import { narrowToCaller } from './db-role.ts';
import { AppError } from './errors.ts';
import { forgeryProblem, readSessionCookie } from './session-cookie.ts';
import type { RateLimiter } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No API key needed (health, OpenAPI, docs, the storage upload endpoint). */
    public?: boolean;
    /**
     * No API key needed, but credentials that come along (a key or a session cookie) are checked and
     * name the caller (`request.principal`): accepting an invitation. Without any, counted per client
     * address.
     */
    optionalAuth?: boolean;
    /** The scope a key must hold for this route. */
    scope?: Scope;
    /**
     * About the signed-in person's own sign-in (sessions, sign-out, password, second factor): a sign-in
     * session only, never an API key, whatever its scopes — a key must not be a way to take over or
     * lock out the person it belongs to. A key answers 403 `session_required`.
     */
    sessionOnly?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
    /** The tenant context of this call: the explicit organization when the route takes one. */
    tenant(explicitOrganizationUid?: string | null): RequestContext;
  }
}

export type Authenticator = (
  key: string,
) => Promise<{ ok: true; principal: Principal } | { ok: false; reason: string }>;

export interface AuthOptions {
  authenticate: Authenticator;
  /** A sign-in session's cookie token → its principal (docs/people.md); without it cookies are ignored. */
  authenticateSession?: Authenticator;
  rateLimiter: RateLimiter;
  /** Called after a successful authentication (records `last_used_at` off the request path). */
  onAuthenticated?: (principal: Principal) => void;
}

const BEARER = /^Bearer (\S+)$/;

/**
 * The organization a request acts in, as far as it is known at authentication: the one it names in
 * its path or query when the caller belongs to it, else the caller's default (or the key's own). The
 * handler may still settle on another (named in the body): `tenant()` then updates the log field.
 */
function likelyOrganizationUid(request: FastifyRequest, principal: Principal): string {
  const named = [
    (request.params as { organization_uid?: unknown } | undefined)?.organization_uid,
    (request.query as { organization_uid?: unknown } | undefined)?.organization_uid,
  ].find((uid) => typeof uid === 'string');
  const isMember = principal.memberships.some((m) => m.organizationUid === named);
  return principal.memberships.length > 0
    ? resolveMembership(principal, isMember ? (named as string) : undefined).organizationUid
    : (principal.credential.organizationUid ?? '');
}

/** The request's id and client address (`request.ip` follows TRUST_PROXY), as services record them. */
export function callOrigin(request: FastifyRequest): CallOrigin {
  return { requestId: request.id, clientAddress: request.ip || null };
}

// Every authentication failure answers the same body, so a caller learns nothing about which keys exist.
const unauthorized = () =>
  new AppError(
    'unauthorized',
    'Missing or invalid API key. Send "Authorization: Bearer <API key>", or sign in (POST /api/auth/sign-in).',
  );
const sessionEnded = () =>
  new AppError('unauthorized', 'Your session has ended or was signed out; sign in again.');

async function authPlugin(app: FastifyInstance, options: AuthOptions) {
  app.decorateRequest('principal', null);
  app.decorateRequest('tenant', function (this: FastifyRequest, explicitOrganizationUid?: string | null) {
    if (!this.principal) throw unauthorized();
    const ctx = contextFor(this.principal, callOrigin(this), explicitOrganizationUid);
    setLogFields(this.log, { organization_uid: ctx.organizationUid });
    // The key may hold the route's scope while the user's role in this organization does not.
    const scope = this.routeOptions.config.scope;
    if (scope && !roleAllows(ctx.role, scope)) {
      throw new AppError('missing_scope', `Your role (${ctx.role}) does not allow ${scope}`);
    }
    if (
      ctx.role === 'admin' &&
      this.principal.credential.kind === 'session' &&
      !this.principal.secondFactor
    ) {
      const membership = this.principal.memberships.find((m) => m.organizationUid === ctx.organizationUid);
      if (membership?.requireAdminMfa) {
        throw new AppError(
          'second_factor_required',
          'This organization requires admins to sign in with a second factor: set up TOTP (POST /api/auth/totp/setup), then sign in again',
        );
      }
    }
    return ctx;
  });

  /** Counts a hit, sets the RateLimit-* headers and refuses with 429 past the limit. */
  const spend = async (request: FastifyRequest, reply: FastifyReply, bucket: string) => {
    let limit;
    try {
      limit = await options.rateLimiter.hit(bucket);
    } catch (error) {
      // A rate-limit store that is down must not take the API down with it.
      request.log.warn({ err: error }, 'rate limiter unavailable; request allowed');
      return;
    }
    reply.header('RateLimit-Limit', limit.limit);
    reply.header('RateLimit-Remaining', limit.remaining);
    reply.header('RateLimit-Reset', limit.resetSeconds);
    if (!limit.allowed) {
      reply.header('Retry-After', limit.resetSeconds);
      throw new AppError(
        'rate_limited',
        `Rate limit of ${limit.limit} requests exceeded; retry in ${limit.resetSeconds} s`,
      );
    }
  };

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const config = request.routeOptions.config;
    if (config.public) return;
    // Requests no credential answers for (unknown routes, failed authentication) are counted per client
    // address instead: they carry the same headers, and guessing keys is slowed down, while a key's own
    // quota is never spent by someone else's failed attempts.
    const anonymous = `ip:${request.ip}`;
    if (request.is404) return spend(request, reply, anonymous);
    const header = request.headers.authorization;
    // Without an Authorization header, a person's browser: the session cookie.
    const token = !header && options.authenticateSession ? readSessionCookie(request) : undefined;
    if (config.optionalAuth && header === undefined && !token) return spend(request, reply, anonymous);
    let result: Awaited<ReturnType<Authenticator>> | undefined;
    if (header) {
      const match = BEARER.exec(header);
      result = match ? await options.authenticate(match[1]!) : undefined;
      if (!result?.ok) {
        await spend(request, reply, anonymous);
        throw unauthorized();
      }
    } else {
      // The session, and for an unsafe method proof that the request comes from our own pages
      // (docs/people.md#cross-site-requests).
      result = token ? await options.authenticateSession!(token) : undefined;
      if (!result?.ok) {
        await spend(request, reply, anonymous);
        throw token ? sessionEnded() : unauthorized();
      }
      const forgery = forgeryProblem(request, token!);
      if (forgery) {
        await spend(request, reply, anonymous);
        throw new AppError('csrf_failed', `Refused as a possible cross-site request: ${forgery}`);
      }
    }
    const principal = result.principal;
    request.principal = principal;
    setLogFields(request.log, { organization_uid: likelyOrganizationUid(request, principal) });
    narrowToCaller(request, principal);
    options.onAuthenticated?.(principal);
    // A key's quota is its own; a person's sessions share one.
    await spend(
      request,
      reply,
      principal.credential.kind === 'api_key' ? principal.credential.uid : `user:${principal.user.uid}`,
    );

    if (config.sessionOnly && principal.credential.kind !== 'session') {
      throw new AppError(
        'session_required',
        'This is done signed in as the person (a sign-in session), not with an API key',
      );
    }
    const scope = config.scope;
    if (scope && !keyAllows(principal.scopes, scope)) {
      throw new AppError('missing_scope', `This API key lacks the ${scope} scope`);
    }
  });
}

export default fp(authPlugin, { name: 'remit-auth' });
