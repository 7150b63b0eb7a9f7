import type { FastifyInstance } from 'fastify';
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';

/**
 * The browser-facing defaults (docs/security.md#http-headers): helmet's headers with a
 * Content-Security-Policy that the API docs (/docs, Swagger UI) and the console (same-origin scripts
 * and styles) satisfy; HSTS only on requests that arrived over HTTPS (directly, or per
 * `X-Forwarded-Proto` from a proxy trusted by TRUST_PROXY), since a browser must never be told to
 * insist on HTTPS for a plain-HTTP development server; CORS only for the origins configured.
 */
export async function registerSecurityHeaders(
  app: FastifyInstance,
  options: { corsOrigins: string[] },
): Promise<void> {
  await app.register(helmet, {
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
    hsts: false,
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    // The embedded object store's downloads are opened from other origins' pages (links in email).
    crossOriginResourcePolicy: { policy: 'same-site' },
  });
  app.addHook('onSend', (request, reply, payload, done) => {
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
