import type { FastifyInstance } from 'fastify';
import cors from '@fastify/cors';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * The browser-facing defaults (docs/security.md#http-headers): `Cache-Control: no-store` on the API's
 * answers unless a route sets its own, helmet's headers with a
 * Content-Security-Policy that the API docs (/docs, Swagger UI) and the console (same-origin scripts
 * and styles) satisfy; HSTS only on requests that arrived over HTTPS (directly, or per
 * `X-Forwarded-Proto` from a proxy trusted by TRUST_PROXY), since a browser must never be told to
 * insist on HTTPS for a plain-HTTP development server; CORS only for the origins configured.
 */
export async function registerSecurityHeaders(
  app: FastifyInstance,
  options: { corsOrigins: string[] },
): Promise<void> {
  const headers = helmetHeaders({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        // Swagger UI sets style attributes; nothing else needs inline styles.
        'style-src': ["'self'", "'unsafe-inline'"],
        // Swagger UI's icons are data: URLs.
        'img-src': ["'self'", 'data:'],
        'font-src': ["'self'", 'data:'],
        'connect-src': ["'self'"],
        'object-src': ["'none'"],
        'base-uri': ["'self'"],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
      },
    },
    strictTransportSecurity: false,
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    // The embedded object store's downloads are opened from other origins' pages (links in email).
    crossOriginResourcePolicy: { policy: 'same-site' },
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.headers(headers);
    // API answers are one caller's data and some carry a secret shown once (a new key, a webhook
    // signing secret, a TOTP seed): no cache or proxy may keep them. Routes with a policy of their own
    // (the PDF's revalidated ETag) keep it.
    if (request.url.startsWith('/api/') && !reply.hasHeader('cache-control'))
      reply.header('Cache-Control', 'no-store');
    if (request.protocol === 'https')
      reply.header('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    done(null, payload);
  });
  if (options.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: options.corsOrigins,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
      exposedHeaders: [
        'X-Request-Id',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Retry-After',
        'Idempotent-Replayed',
        'Original-Request',
      ],
      maxAge: 600,
      // Bearer keys only; no cookies cross origins.
      credentials: false,
    });
  }
}

/**
 * The headers helmet sets for `options`, worked out once. Without nonces they do not depend on the
 * request, and @fastify/helmet built helmet's middleware again on every request (parsing the CSP each
 * time: ~7 % of `GET /api/me`'s server time, docs/performance.md#hot-paths).
 */
export function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number | readonly string[]) => {
      headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
    },
    removeHeader: (name: string) => {
      delete headers[name];
    },
  };
  let failure: unknown;
  helmet(options)({} as never, response as never, (error?: unknown) => {
    failure = error;
  });
  if (failure) throw failure instanceof Error ? failure : new Error(String(failure));
  return headers;
}
