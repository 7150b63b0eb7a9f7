import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from './errors.ts';
import { helmetHeaders } from './security-headers.ts';

/** Where the console is served (docs/console.md). */
export const CONSOLE_PREFIX = '/app';

/**
 * The pages Remit's emails link to (`PUBLIC_BASE_URL` + path, docs/people.md, docs/approval-emails.md):
 * they are console pages, so each redirects into `/app` with its query (the emailed token) kept.
 */
export const EMAILED_LINK_PAGES = [
  '/accept-invitation',
  '/reset-password',
  '/sign-in-link',
  '/approval',
] as const;

/**
 * Stricter than the API's policy (security-headers.ts), which allows inline styles for Swagger UI: the
 * console is same-origin scripts, styles and API calls only — no inline script or style, no CDN, no
 * plugin, not framed. Its images are bundled files or `data:` URLs the bundler inlined. The one other
 * origin it may reach is object storage's (`uploadOrigin`): knowledge files go from the browser straight
 * to the presigned form's URL, which is another origin when S3 is configured.
 */
export function consoleCsp(uploadOrigin?: string): string {
  return helmetHeaders({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        'style-src': ["'self'"],
        'img-src': ["'self'", 'data:'],
        'font-src': ["'self'"],
        'connect-src': ["'self'", ...(uploadOrigin ? [uploadOrigin] : [])],
        'object-src': ["'none'"],
        'base-uri': ["'self'"],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
      },
    },
  })['Content-Security-Policy']!;
}

/**
 * Serves the console built into `root` (web/dist: `index.html` and hashed `assets/`): the assets with
 * a year's caching (their names change with their content), `index.html` for `/app` and every client
 * route under it, revalidated on each load (`no-cache`) so a new build is picked up at once. Brotli or
 * gzip copies written by the build are sent to browsers that accept them. Every route here is public
 * (the page signs in through the API) and left out of the OpenAPI document.
 */
export async function registerConsole(
  app: FastifyInstance,
  options: { root: string; uploadOrigin?: string },
): Promise<void> {
  const { root } = options;
  const csp = consoleCsp(options.uploadOrigin);
  const consoleRoutes = (scope: FastifyInstance) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, public: true };
      route.schema = { ...route.schema, hide: true };
    });
    scope.addHook('onSend', (_request, reply, payload, done) => {
      reply.header('Content-Security-Policy', csp);
      done(null, payload);
    });
  };

  await app.register(async (scope) => {
    consoleRoutes(scope);
    for (const page of EMAILED_LINK_PAGES) {
      scope.get(page, (request, reply) => {
        const query = request.url.indexOf('?');
        return reply.redirect(`${CONSOLE_PREFIX}${page}${query < 0 ? '' : request.url.slice(query)}`, 302);
      });
    }
  });

  await app.register(
    async (scope) => {
      consoleRoutes(scope);
      // Everything under /app is a page (index.html) but the assets: a missing one is a plain 404, never
      // the page (a script tag would be handed HTML).
      scope.setNotFoundHandler((request, reply) => {
        if (request.method === 'GET' || request.method === 'HEAD') {
          throw new AppError('not_found', `${request.url.split('?')[0]} is not a file of this console build`);
        }
        reply.header('Allow', 'GET, HEAD');
        throw new AppError('method_not_allowed', `${request.method} is not allowed here; use GET, HEAD`);
      });

      if (!fs.existsSync(path.join(root, 'index.html'))) {
        const notBuilt = () => {
          throw new AppError(
            'not_found',
            'The console is not built in this installation: run `npm run build` and restart Remit',
          );
        };
        scope.get('/', notBuilt);
        scope.get('/*', notBuilt);
        return;
      }

      await scope.register(fastifyStatic, {
        root: path.join(root, 'assets'),
        prefix: '/assets/',
        // `public, max-age=31536000, immutable`: Vite names each asset after a hash of its content, so a
        // changed file is a new URL. (send's maxAge is in milliseconds.)
        maxAge: 31_536_000_000,
        immutable: true,
        preCompressed: true,
        index: false,
      });
      const sendIndex = (_request: FastifyRequest, reply: FastifyReply) => {
        reply.header('Cache-Control', 'no-cache');
        return reply.sendFile('index.html', root, { cacheControl: false });
      };
      scope.get('/', sendIndex);
      scope.get('/*', sendIndex);
    },
    { prefix: CONSOLE_PREFIX },
  );
}
