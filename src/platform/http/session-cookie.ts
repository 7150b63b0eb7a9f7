import crypto from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseCookie, stringifySetCookie } from 'cookie';

/**
 * The sign-in session cookie (docs/people.md#the-cookie). Over HTTPS (directly, or per a trusted
 * proxy's X-Forwarded-Proto) it is `__Host-remit_session`: Secure, host-only, path `/`, so no other
 * subdomain or plain-HTTP page can set or overwrite it. A browser refuses a `__Host-` cookie without
 * Secure, so a plain-HTTP server (development) uses `remit_session`; each protocol reads only its own
 * name. Always HttpOnly (no script reads it) and SameSite=Lax (not sent with another site's POST).
 */
export const SECURE_SESSION_COOKIE = '__Host-remit_session';
export const PLAIN_SESSION_COOKIE = 'remit_session';

/** Header a cookie-authenticated unsafe request must carry (docs/people.md#cross-site-requests). */
export const CSRF_HEADER = 'x-csrf-token';

function cookieName(request: FastifyRequest): string {
  return request.protocol === 'https' ? SECURE_SESSION_COOKIE : PLAIN_SESSION_COOKIE;
}

/** The session token the request carries, if any. */
export function readSessionCookie(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header || !header.includes('remit_session')) return undefined;
  const value = parseCookie(header)[cookieName(request)];
  return value && value.length > 0 && value.length <= 256 ? value : undefined;
}

export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  maxAgeS: number,
) {
  const secure = request.protocol === 'https';
  reply.header(
    'Set-Cookie',
    stringifySetCookie({
      name: cookieName(request),
      value: token,
      httpOnly: true,
      secure,
      sameSite: 'lax',
      path: '/',
      maxAge: Math.max(0, Math.floor(maxAgeS)),
    }),
  );
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply) {
  setSessionCookie(request, reply, '', 0);
}

/**
 * The anti-forgery token of a session: derived from the session token (which no script can read), so
 * it needs no storage, and a page that cannot read our responses cannot learn it.
 */
export function csrfTokenFor(sessionToken: string): string {
  return crypto.createHash('sha256').update(`remit csrf\0${sessionToken}`).digest('base64url');
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a cookie-authenticated request is refused as a possible cross-site forgery, or null when it
 * passes: an unsafe method needs an `Origin` (when the browser sends one) equal to this server's own,
 * and the session's token in `X-CSRF-Token`.
 */
export function forgeryProblem(request: FastifyRequest, sessionToken: string): string | null {
  if (SAFE_METHODS.has(request.method)) return null;
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `${request.protocol}://${request.host}`) {
    return `Origin ${origin} is not this server's`;
  }
  const given = request.headers[CSRF_HEADER];
  const expected = csrfTokenFor(sessionToken);
  if (typeof given !== 'string' || given.length !== expected.length) {
    return `Send the session's token in the ${CSRF_HEADER} header`;
  }
  return crypto.timingSafeEqual(Buffer.from(given), Buffer.from(expected))
    ? null
    : `The ${CSRF_HEADER} header does not match the session`;
}
