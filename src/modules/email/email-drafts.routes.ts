import { Type } from 'typebox';
import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  DRAFT_BODY_LIMIT_BYTES,
  EmailDraft,
  EmailDraftListEnvelope,
  ListDraftsQuery,
  SaveDraftBody,
  UidParams,
} from './email-drafts.schemas.ts';
import * as service from './email-drafts.service.ts';

/**
 * Interface 4.6: the draft routes answer the bare record, no envelope (interface 2.1). The list, which
 * the interface does not have, is enveloped like every other list (`GET /api/email/accounts`), with
 * the bare records as its items.
 */
export async function emailDraftRoutes(app: App, deps: AppDeps) {
  const draftDeps: service.EmailDraftDeps = {
    db: deps.database.db,
    jobs: deps.jobs,
    storage: deps.objectStorage,
    onCleanupError: (what, error) => app.log.warn({ err: error }, `email draft: could not remove ${what}`),
  };
  app.addSchema(EmailDraft);
  const draftRef = Type.Ref('EmailDraft');
  const tags = ['Email'];

  app.post(
    '/api/email/drafts',
    {
      // Up to 10 MB of attachments arrive base64-encoded in the JSON body.
      bodyLimit: DRAFT_BODY_LIMIT_BYTES,
      schema: {
        operationId: 'saveEmailDraft',
        tags,
        summary:
          'Save a draft: without uid a create (201, from_account_id required), with uid an update of the fields sent (200)',
        body: SaveDraftBody,
        response: { 200: draftRef, 201: draftRef, ...errorResponses },
      },
      config: { scope: 'email:write', idempotency: 'deferred', errors: ['not_found', 'invalid_state'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      if (request.body.uid) return service.updateDraft(draftDeps, ctx, request.body.uid, request.body);
      return reply.code(201).send(await service.createDraft(draftDeps, ctx, request.body));
    },
  );

  app.get(
    '/api/email/drafts',
    {
      schema: {
        operationId: 'listEmailDrafts',
        tags,
        summary: "List the organization's emails (drafts and what became of them), newest change first",
        description:
          'Every status unless `status` narrows it. `data.items` are the records `GET /api/email/drafts/{uid}` ' +
          'answers, `data._meta` the page; `per_page` 1–100, default 25.',
        querystring: ListDraftsQuery,
        response: { 200: EmailDraftListEnvelope, ...errorResponses },
      },
      config: { scope: 'email:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listDrafts(draftDeps.db, ctx, request.query, page);
      return envelope({ items, _meta: pageMeta(page, total) }, 'Email drafts');
    },
  );

  app.get(
    '/api/email/drafts/:uid',
    {
      schema: {
        operationId: 'getEmailDraft',
        tags,
        summary: 'Get an email draft (404 when it does not exist)',
        params: UidParams,
        response: { 200: draftRef, ...errorResponses },
      },
      config: { scope: 'email:read', errors: ['not_found'] },
    },
    async (request) => service.getDraft(draftDeps.db, request.tenant(), request.params.uid),
  );

  app.delete(
    '/api/email/drafts/:uid',
    {
      schema: {
        operationId: 'cancelEmailDraft',
        tags,
        summary: 'Cancel an email that has not gone out (→ canceled; sending, sent or canceled → 409)',
        params: UidParams,
        response: { 200: draftRef, ...errorResponses },
      },
      config: { scope: 'email:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request) => service.cancelDraft(draftDeps, request.tenant(), request.params.uid),
  );
}
