import { envelope } from '../../platform/http/envelope.ts';
import { AppError } from '../../platform/http/errors.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { ContextSearchEnvelope, ContextSearchQuery, SearchEnvelope, SearchQuery } from './search.schemas.ts';
import * as service from './search.service.ts';

export async function searchRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;

  app.get(
    '/api/search',
    {
      schema: {
        operationId: 'searchEntities',
        tags: ['Search'],
        summary:
          'Search or suggest across invoices, customers, tasks, conversations, documents and knowledge',
        querystring: SearchQuery,
        response: { 200: SearchEnvelope, ...errorResponses },
      },
      config: { scope: 'search:read', errors: ['bad_request'] },
    },
    async (request) => {
      // Interface §7: a caller with no organization at all is a 400 here, not a 403.
      if (request.principal!.memberships.length === 0)
        throw new AppError('bad_request', 'Your user belongs to no organization');
      const ctx = request.tenant(request.query.organization_uid);
      return envelope({ data: await service.search(db, ctx, request.query) }, 'Search results');
    },
  );

  app.get(
    '/api/work-tasks/context-search',
    {
      schema: {
        operationId: 'searchWorkTaskContext',
        tags: ['Work tasks', 'Search'],
        summary: 'Type-ahead for entities a task can link (invoices, parties, messages)',
        querystring: ContextSearchQuery,
        response: { 200: ContextSearchEnvelope, ...errorResponses },
      },
      config: { scope: 'work_tasks:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      return envelope(await service.contextSearch(db, ctx, request.query), 'Context search results');
    },
  );
}
