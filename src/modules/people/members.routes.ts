import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  ChangeRoleBody,
  ListMembersQuery,
  Member,
  MemberEnvelope,
  MemberListEnvelope,
  MemberParams,
  OrganizationParams,
  RemovedMemberEnvelope,
} from './members.schemas.ts';
import * as service from './members.service.ts';

/** An organization's members, for its admins (docs/people.md#members-and-invitations). */
export async function memberRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(Member);
  const tags = ['Members and invitations'];

  app.get(
    '/api/organization/:organization_uid/members',
    {
      schema: {
        operationId: 'listMembers',
        tags,
        summary: "List the organization's members with their role and last activity (admins)",
        params: OrganizationParams,
        querystring: ListMembersQuery,
        response: { 200: MemberListEnvelope, ...errorResponses },
      },
      config: { scope: 'members:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listMembers(db, ctx, request.query, page);
      return envelope({ items, _meta: pageMeta(page, total) }, 'Members');
    },
  );

  app.patch(
    '/api/organization/:organization_uid/members/:user_uid',
    {
      schema: {
        operationId: 'updateMember',
        tags,
        summary: "Change a member's role (admins; the last admin cannot be demoted)",
        params: MemberParams,
        body: ChangeRoleBody,
        response: { 200: MemberEnvelope, ...errorResponses },
      },
      config: {
        scope: 'members:write',
        errors: ['not_found', 'invalid_state'],
        exists: (ctx, { user_uid }) => service.memberExists(db, ctx, user_uid!),
      },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const member = await service.changeMemberRole(db, ctx, request.params.user_uid, request.body.role);
      return envelope(member, 'Member updated');
    },
  );

  app.delete(
    '/api/organization/:organization_uid/members/:user_uid',
    {
      schema: {
        operationId: 'removeMember',
        tags,
        summary:
          'Remove a member (admins): their keys here are revoked and their open work tasks unassigned; the last admin cannot be removed',
        params: MemberParams,
        response: { 200: RemovedMemberEnvelope, ...errorResponses },
      },
      config: { scope: 'members:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      return envelope(
        await service.removeMember(db, deps.jobs, ctx, request.params.user_uid),
        'Member removed',
      );
    },
  );
}
