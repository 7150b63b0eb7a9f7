import type { FastifyServerOptions } from 'fastify';

/**
 * JSON logs with the request id on every line. Keys never reach a log: the Authorization header,
 * the Idempotency-Key and any member named like a key or secret are redacted.
 */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["idempotency-key"]',
        'headers.authorization',
        '*.api_key',
        '*.key',
        '*.secret',
        '*.password',
        '*.smtp_url',
      ],
      censor: '[redacted]',
    },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
  };
}
