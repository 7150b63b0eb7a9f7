import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError, ERROR_CODES, type ErrorCode } from '../http/errors.ts';
import type { App } from '../http/types.ts';
import type { Metrics } from './metrics.ts';

const BEARER = /^Bearer (\S+)$/;
const REFUSED = 'Missing or invalid metrics token. Send "Authorization: Bearer <METRICS_TOKEN>".';

/**
 * Whether the `Authorization` header carries `token`. Both sides are hashed first, so the comparison
 * takes the same time whatever is sent, its length included.
 */
export function carriesToken(authorization: string | undefined, token: string): boolean {
  const given = (authorization ? BEARER.exec(authorization) : null)?.[1];
  const digest = (value: string) => crypto.createHash('sha256').update(value).digest();
  const same = crypto.timingSafeEqual(digest(given ?? ''), digest(token));
  return same && given !== undefined;
}

/**
 * `GET /metrics` on the API's own port, behind `METRICS_TOKEN` (docs/observability.md#scraping). Not an
 * API route: no API key, no rate limit (public), and not in the OpenAPI document (hidden).
 */
export function metricsRoute(app: App, metrics: Metrics, token: string): void {
  app.get(
    '/metrics',
    { schema: { hide: true, operationId: 'scrapeMetrics' }, config: { public: true } },
    async (request, reply) => {
      if (!carriesToken(request.headers.authorization, token)) {
        reply.header('WWW-Authenticate', 'Bearer realm="metrics"');
        throw new AppError('unauthorized', REFUSED);
      }
      const { contentType, body } = await metrics.render();
      return reply.type(contentType).send(body);
    },
  );
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * `METRICS_PORT`: `GET /metrics` alone on a listener of its own (127.0.0.1 unless `METRICS_HOST`), so
 * the scrape never shares the API's address; the token is asked for here too when it is set. Every
 * other answer is the one error body, as on the API.
 */
export async function startMetricsServer(
  metrics: Metrics,
  options: { port: number; host: string; token: string | undefined },
): Promise<MetricsServer> {
  const refuse = (res: http.ServerResponse, code: ErrorCode, message: string, headers = {}) => {
    const status = ERROR_CODES[code];
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify({ status: 'error', status_code: status, message, code }));
  };
  const answer = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://metrics').pathname !== '/metrics') {
      return refuse(res, 'route_not_found', `Route ${req.method} ${req.url} not found`);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return refuse(res, 'method_not_allowed', 'Only GET /metrics is served here', { allow: 'GET, HEAD' });
    }
    if (options.token !== undefined && !carriesToken(req.headers.authorization, options.token)) {
      return refuse(res, 'unauthorized', REFUSED, { 'www-authenticate': 'Bearer realm="metrics"' });
    }
    const { contentType, body } = await metrics.render();
    res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  const server = http.createServer((req, res) => {
    answer(req, res).catch(() => {
      if (!res.headersSent) refuse(res, 'internal_error', 'The metrics could not be collected');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
