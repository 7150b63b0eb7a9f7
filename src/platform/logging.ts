import type { FastifyServerOptions } from 'fastify';

/**
 * Query parameters that are credentials: the signature and credential of a presigned download, a
 * session token. Their values never reach a log line (the rest of the URL does).
 */
const SECRET_QUERY =
  /([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|signature|token|key|api_key)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[redacted]');
}

/**
 * JSON logs with the request id on every line. No credential reaches a log (docs/security.md#logs):
 * the Authorization and Cookie headers, the Idempotency-Key, signed query parameters, and any member
 * named like a key, secret, password, token or SMTP URL — at the top level of a log line or one or two
 * levels down (a request body, an error's details) — are replaced by `[redacted]`.
 */
export function loggerOptions(
  level: string,
  stream?: { write(line: string): void },
): FastifyServerOptions['logger'] {
  const names = [
    'api_key',
    'key',
    'secret',
    'password',
    'token',
    'smtp_url',
    'smtpUrl',
    'authorization',
    'cookie',
  ];
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["idempotency-key"]',
        'res.headers["set-cookie"]',
        'headers.authorization',
        'headers.cookie',
        'headers["idempotency-key"]',
        ...names,
        ...names.map((n) => `*.${n}`),
        ...names.map((n) => `*.*.${n}`),
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { method: string; url: string; hostname?: string; ip?: string; id?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        host: req.hostname,
        remoteAddress: req.ip,
      }),
    },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
  };
}
