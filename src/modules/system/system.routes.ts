import { Type } from 'typebox';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { AppError } from '../../platform/http/errors.ts';
import { ErrorRef } from '../../platform/http/schemas.ts';

export async function systemRoutes(app: App, deps: AppDeps) {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getHealth',
        tags: ['System'],
        summary: 'Liveness; reports a full disk (the process lives, writes are refused with 507)',
        response: {
          200: Type.Object({
            status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
            storage: Type.Optional(
              Type.Object({
                status: Type.Literal('full'),
                free_bytes: Type.Integer(),
                min_free_bytes: Type.Integer(),
              }),
            ),
          }),
        },
      },
      config: { public: true },
    },
    async () => {
      if (!(await app.diskSpace.isLow())) return { status: 'ok' as const };
      return {
        status: 'degraded' as const,
        storage: {
          status: 'full' as const,
          free_bytes: app.diskSpace.freeBytes ?? 0,
          min_free_bytes: app.diskSpace.minFreeBytes,
        },
      };
    },
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        tags: ['System'],
        summary: 'Readiness: 200 when the database answers, else 503',
        response: { 200: Type.Object({ status: Type.Literal('ok') }), 503: ErrorRef },
      },
      config: { public: true },
    },
    async () => {
      try {
        await deps.database.ping();
        return { status: 'ok' as const };
      } catch {
        // Thrown, not sent: the error handler writes the one error body with its request id (a body sent
        // here without one failed its own response schema and went out as a 500).
        throw new AppError('service_unavailable', 'The database is not answering');
      }
    },
  );

  app.get(
    '/api/openapi.json',
    {
      schema: {
        operationId: 'getOpenApiDocument',
        tags: ['System'],
        summary: 'This OpenAPI 3.1 document',
        response: {
          200: Type.Object(
            { openapi: Type.String() },
            { additionalProperties: true, description: 'The OpenAPI 3.1 document (docs/openapi.md)' },
          ),
          // Its only failure: a query parameter it does not take (every /api/ route refuses them).
          400: ErrorRef,
        },
      },
      config: { public: true },
    },
    async () => app.swagger(),
  );
}
