import { Type } from 'typebox';
import { envelope } from '../../platform/http/envelope.ts';
import { DateTime, Envelope, errorResponses, Uuid } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import * as service from './organization-settings.service.ts';

const Params = Type.Object({ organization_uid: Uuid });
const Settings = Type.Object({
  organization_uid: Uuid,
  segregation_of_duties: Type.Boolean({
    description: 'When true, the user who entered a payable cannot also approve it (admins included)',
  }),
  require_admin_mfa: Type.Boolean({
    description: 'When true, admins signed in with a session act here only with a second factor (TOTP)',
  }),
  updated_at: DateTime,
});
const PatchBody = Type.Object(
  { segregation_of_duties: Type.Optional(Type.Boolean()), require_admin_mfa: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);

export async function organizationSettingsRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const tags = ['Organization'];
  app.get(
    '/api/organization/:organization_uid/settings',
    {
      schema: {
        operationId: 'getOrganizationSettings',
        tags,
        summary: "The organization's settings (segregation of duties, second factor for admins)",
        params: Params,
        response: { 200: Envelope(Settings), ...errorResponses },
      },
      config: { errors: ['second_factor_required', 'not_found'] },
    },
    async (request) =>
      envelope(
        await service.getOrganizationSettings(db, request.tenant(request.params.organization_uid)),
        'Organization settings',
      ),
  );
  app.patch(
    '/api/organization/:organization_uid/settings',
    {
      schema: {
        operationId: 'updateOrganizationSettings',
        tags,
        summary: "Change the organization's settings (admins)",
        params: Params,
        body: PatchBody,
        response: { 200: Envelope(Settings), ...errorResponses },
      },
      config: { errors: ['forbidden', 'second_factor_required', 'not_found'] },
    },
    async (request) =>
      envelope(
        await service.updateOrganizationSettings(
          db,
          request.tenant(request.params.organization_uid),
          request.body,
        ),
        'Organization settings updated',
      ),
  );
}
