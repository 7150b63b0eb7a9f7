import { STATUS_CODES } from 'node:http';
import Fastify, {
  type FastifyInstance,
  type FastifyPluginCallback,
  type FastifyReply,
  type FastifyRequest,
  type LightMyRequestResponse,
} from 'fastify';
import swagger, { type StaticDocumentSpec } from '@fastify/swagger';
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { AppError } from './errors.ts';

/** Where the human API docs (Swagger UI over the OpenAPI document) are served. */
const DOCS_PREFIX = '/docs';

/** Swagger UI's options, as they were when it was registered on the app itself. */
const UI_OPTIONS: FastifySwaggerUiOptions = { routePrefix: DOCS_PREFIX, uiConfig: { docExpansion: 'list' } };

/**
 * The paths @fastify/swagger-ui serves below its prefix with these options (no theme, no baseDir): its
 * lib/routes.js, and @fastify/static's wildcard for its folder. Only these are routed to it, so any other
 * path under /docs gets the app's own 404 or 405, as when Swagger UI was registered on the app.
 */
const UI_PATHS = ['', '/static/index.html', '/static/swagger-initializer.js', '/json', '/yaml', '/static/*'];

/** Request headers that describe the connection or a body, not the request for a page. */
const CONNECTION_HEADERS = ['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade'];
/** Response headers the app's own reply sets (or Node's server does) for the payload it sends. */
const OWN_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date']);

export type SwaggerUiPlugin = FastifyPluginCallback<FastifySwaggerUiOptions>;

export interface ApiDocsOptions {
  /** How Swagger UI is loaded on the first request (a test may make it fail). */
  loadSwaggerUi?: () => Promise<SwaggerUiPlugin>;
}

const loadSwaggerUi = async (): Promise<SwaggerUiPlugin> =>
  (await import('@fastify/swagger-ui')).default as SwaggerUiPlugin;

/**
 * Serves the API docs at /docs without loading Swagger UI at start (≈ 100 ms of a start, for pages most
 * processes never serve): the routes are the app's own, public and left out of the OpenAPI document; the
 * first request loads @fastify/swagger-ui into a small Fastify instance of its own, built once, that
 * serves the app's OpenAPI document (`app.swagger()`, complete by then). Each request is answered by that
 * instance and sent back through the app's reply, so the app's hooks (security headers, CSP, the access
 * line) apply as to any other answer, and its errors are the app's one error body.
 */
export function registerApiDocs(app: FastifyInstance, options: ApiDocsOptions = {}): void {
  const load = options.loadSwaggerUi ?? loadSwaggerUi;
  // One build, shared by the requests that arrive while it runs; a failed one is tried again by the next.
  let built: Promise<FastifyInstance> | undefined;
  const docsApp = (): Promise<FastifyInstance> => {
    built ??= buildDocsApp(app, load).catch((error: unknown) => {
      built = undefined;
      throw error;
    });
    return built;
  };
  app.addHook('onClose', async () => {
    const docs = built;
    built = undefined;
    await docs?.then(
      (instance) => instance.close(),
      () => undefined,
    );
  });

  const forward = async (request: FastifyRequest, reply: FastifyReply) => {
    const docs = await docsApp();
    const headers = { ...request.headers };
    for (const name of CONNECTION_HEADERS) delete headers[name];
    // A HEAD is answered as its GET: the app's HEAD route sends the headers and drops the body.
    const res = await docs.inject({ method: 'GET', url: request.url, headers });
    if (res.statusCode >= 400) throw docsError(request, res);
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined && !OWN_HEADERS.has(name)) reply.header(name, value);
    }
    // No body (a redirect, a 304) is sent as none, so the reply gets no content type of its own.
    return reply.code(res.statusCode).send(res.rawPayload.length > 0 ? res.rawPayload : undefined);
  };
  for (const path of UI_PATHS) {
    app.get(`${DOCS_PREFIX}${path}`, { config: { public: true }, schema: { hide: true } }, forward);
  }
}

async function buildDocsApp(
  app: FastifyInstance,
  load: () => Promise<SwaggerUiPlugin>,
): Promise<FastifyInstance> {
  const swaggerUi = await load();
  // Its answers (and their errors) go out through the app's reply, which logs them.
  const docs = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } });
  try {
    // The app's own document, as built (OpenAPI 3.1, which the static mode's types do not name).
    const document = app.swagger() as StaticDocumentSpec['document'];
    await docs.register(swagger, { mode: 'static', specification: { document } });
    await docs.register(swaggerUi, UI_OPTIONS);
    await docs.ready();
  } catch (error) {
    await docs.close().catch(() => undefined);
    throw error;
  }
  return docs;
}

/**
 * An answer of Swagger UI's that is an error, as the app answers errors: a file that is not there (which
 * @fastify/static hands to the not-found handler) is a 404; any other (a path it refuses, a range it
 * cannot serve) goes through the app's error handler with its status and message, as when Swagger UI
 * was registered on the app.
 */
function docsError(request: FastifyRequest, res: LightMyRequestResponse): Error {
  if (res.statusCode === 404) {
    return new AppError('not_found', `${request.url.split('?')[0]} is not a page or file of the API docs`);
  }
  let message: unknown;
  try {
    message = (JSON.parse(res.payload) as { message?: unknown }).message;
  } catch {
    // Not Fastify's JSON error body: the status's own text.
  }
  return Object.assign(
    new Error(typeof message === 'string' && message ? message : STATUS_CODES[res.statusCode]),
    { statusCode: res.statusCode },
  );
}
