import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { ErrorRef, errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { redactPathSegmentAfter } from '../../platform/logging.ts';
import {
  AcceptedInvitationEnvelope,
  AcceptInvitationBody,
  CreateInvitationBody,
  Invitation,
  InvitationEnvelope,
  InvitationListEnvelope,
  InvitationParams,
  ListInvitationsQuery,
  PresentedInvitationEnvelope,
  TokenParams,
} from './invitations.schemas.ts';
import { OrganizationParams } from './members.schemas.ts';
import * as service from './invitations.service.ts';

/**
 * Invitations (docs/people.md#members-and-invitations): sent, resent and revoked by an organization's
 * admins; looked at and accepted by whoever holds the emailed link.
 */
export async function invitationRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const invitationDeps: service.InvitationDeps = { db, config: deps.config, mail: deps.clients.mail };
  app.addSchema(Invitation);
  const tags = ['Members and invitations'];
  // The token in GET /api/invitations/{token} is a credential: request logs and traces never show it.
  redactPathSegmentAfter('/api/invitations/', ['accept']);

  app.get(
    '/api/organization/:organization_uid/invitations',
    {
      schema: {
        operationId: 'listInvitations',
        tags,
        summary: "List the organization's invitations, newest first, with their status (admins)",
        params: OrganizationParams,
        querystring: ListInvitationsQuery,
        response: { 200: InvitationListEnvelope, ...errorResponses },
      },
      config: { scope: 'members:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listInvitations(db, ctx, request.query, page);
      return envelope({ items, _meta: pageMeta(page, total) }, 'Invitations');
    },
  );

  app.post(
    '/api/organization/:organization_uid/invitations',
    {
      schema: {
        operationId: 'createInvitation',
        tags,
        summary: 'Invite someone by email (admins); the link is emailed and never returned',
        params: OrganizationParams,
        body: CreateInvitationBody,
        response: { 201: InvitationEnvelope, ...errorResponses },
      },
      config: { scope: 'members:write', errors: ['already_exists', 'bad_gateway'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.params.organization_uid);
      const invitation = await service.createInvitation(invitationDeps, ctx, request.body);
      return reply.code(201).send(envelope(invitation, 'Invitation sent', 201));
    },
  );

  app.post(
    '/api/organization/:organization_uid/invitations/:uid/resend',
    {
      schema: {
        operationId: 'resendInvitation',
        tags,
        summary:
          'Send a pending or expired invitation again: a new link and expiry; the old link stops working',
        params: InvitationParams,
        response: { 200: InvitationEnvelope, ...errorResponses },
      },
      config: { scope: 'members:write', errors: ['not_found', 'invalid_state', 'bad_gateway'] },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      return envelope(
        await service.resendInvitation(invitationDeps, ctx, request.params.uid),
        'Invitation sent again',
      );
    },
  );

  app.delete(
    '/api/organization/:organization_uid/invitations/:uid',
    {
      schema: {
        operationId: 'revokeInvitation',
        tags,
        summary: 'Revoke an invitation (admins): its link stops working',
        params: InvitationParams,
        response: { 200: InvitationEnvelope, ...errorResponses },
      },
      config: { scope: 'members:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      return envelope(await service.revokeInvitation(db, ctx, request.params.uid), 'Invitation revoked');
    },
  );

  // No key needed: the token is the credential. A key (or later a session) that comes along names the
  // caller, which is how an existing user accepts. Counted per client address without one.
  const optional: { [scheme: string]: string[] }[] = [{}, { bearerAuth: [] }, { sessionCookie: [] }];

  app.get(
    '/api/invitations/:token',
    {
      schema: {
        operationId: 'getInvitationByToken',
        tags,
        summary:
          'What an invitation link offers: organization, email, role, expiry, whether the account exists',
        security: optional,
        params: TokenParams,
        response: { 200: PresentedInvitationEnvelope, 410: ErrorRef, ...errorResponses },
      },
      config: { optionalAuth: true, errors: ['not_found', 'invalid_state', 'token_expired'] },
    },
    async (request) => envelope(await service.presentInvitation(db, request.params.token), 'Invitation'),
  );

  app.post(
    '/api/invitations/accept',
    {
      schema: {
        operationId: 'acceptInvitation',
        tags,
        summary:
          'Accept an invitation: as a new user (full_name, password), or signed in as the invited existing user',
        security: optional,
        body: AcceptInvitationBody,
        response: { 200: AcceptedInvitationEnvelope, 410: ErrorRef, ...errorResponses },
      },
      // Its writes run as the service in one transaction of their own (the caller's organizations do not
      // include the invitation's yet): under an Idempotency-Key that transaction is the request's.
      config: {
        optionalAuth: true,
        idempotency: 'deferred',
        errors: ['forbidden', 'not_found', 'already_exists', 'invalid_state', 'token_expired'],
      },
    },
    async (request) =>
      envelope(
        await service.acceptInvitation(db, request.principal, request.body, {
          requestId: request.id,
          clientAddress: request.ip || null,
        }),
        'Invitation accepted',
      ),
  );
}
