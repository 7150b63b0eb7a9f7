import type { FastifyRequest } from 'fastify';
import { envelope } from '../../platform/http/envelope.ts';
import { ErrorRef, errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  ApprovalLink,
  ApprovalLinkEnvelope,
  DecideByLinkBody,
  LookUpLinkBody,
} from './approval-links.schemas.ts';
import * as service from './approval-links.service.ts';

const caller = (request: FastifyRequest): service.LinkCaller => ({
  ip: request.ip,
  requestId: request.id,
  clientAddress: request.ip || null,
});

/**
 * Deciding an approval from its email (docs/approval-emails.md): no key and no session, the emailed
 * token is the credential. Both routes take the token in the body, never in the address: it is too long
 * for a path segment, and a query string would reach proxies' access logs. Public like the sign-in
 * links: throttled per client address, and an Idempotency-Key is not kept (the link itself decides
 * once).
 */
export async function approvalLinkRoutes(app: App, deps: AppDeps) {
  const linkDeps: service.ApprovalLinkDeps = {
    db: deps.database.db,
    jobs: deps.jobs,
    secretKeys: deps.secrets.keys,
  };
  app.addSchema(ApprovalLink);
  const tags = ['Work tasks'];
  const linkErrors = ['invalid_token', 'token_expired', 'forbidden', 'not_found', 'rate_limited'] as const;

  app.post(
    '/api/approval-links/lookup',
    {
      config: { public: true, idempotency: 'none', errors: [...linkErrors] },
      schema: {
        operationId: 'lookUpApprovalLink',
        tags,
        summary:
          'What an emailed approval link is about: the request, its invoices, whether it is decided and by whom (decides nothing)',
        security: [],
        body: LookUpLinkBody,
        response: { 200: ApprovalLinkEnvelope, 410: ErrorRef, ...errorResponses },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return envelope(
        await service.lookUpApprovalLink(linkDeps, request.body.token, caller(request)),
        'Approval',
      );
    },
  );

  app.post(
    '/api/approval-links/decide',
    {
      config: {
        public: true,
        idempotency: 'none',
        // The decision is the API's (patchTask): its refusals are this route's too.
        errors: [
          ...linkErrors,
          'token_used',
          'already_resolved',
          'approval_changed',
          'approval_expired',
          'not_an_approver',
          'initiator_cannot_approve',
          'validation_failed',
        ],
      },
      schema: {
        operationId: 'decideByApprovalLink',
        tags,
        summary:
          'Approve or reject with an emailed link, as the person it was sent to (once; a reason is optional unless the policy requires one)',
        security: [],
        body: DecideByLinkBody,
        response: { 200: ApprovalLinkEnvelope, 410: ErrorRef, ...errorResponses },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      const decided = await service.decideByApprovalLink(linkDeps, request.body, caller(request));
      return envelope(decided, decided.task.resolution === 'rejected' ? 'Rejected' : 'Approved');
    },
  );
}
