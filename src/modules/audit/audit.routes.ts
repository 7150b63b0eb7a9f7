import { envelope } from '../../platform/http/envelope.ts';
import { pageLinks, pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  AuditEvent,
  AuditEventListEnvelope,
  AuditEventsParams,
  ListAuditEventsQuery,
} from './audit.schemas.ts';
import * as service from './audit.service.ts';

export async function auditRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(AuditEvent);

  app.get(
    '/api/organization/:organization_uid/audit-events',
    {
      schema: {
        operationId: 'listAuditEvents',
        tags: ['Audit log'],
        summary: "The organization's audit log, newest first (admins)",
        description:
          'Every change to invoices, line items, payments, parties, tasks, agents, API keys, members, the billing integration and email, with who made it and from where (docs/audit-log.md). Events are never updated or deleted through the API.',
        params: AuditEventsParams,
        querystring: ListAuditEventsQuery,
        response: { 200: AuditEventListEnvelope, ...errorResponses },
      },
      config: { scope: 'audit:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listAuditEvents(db, ctx, request.query, page);
      const meta = pageMeta(page, total);
      return envelope(
        { items, _meta: meta, _links: pageLinks(deps.config.publicBaseUrl, request.url, meta) },
        'Audit events',
      );
    },
  );
}
