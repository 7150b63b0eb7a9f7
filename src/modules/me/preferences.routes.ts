import { envelope } from '../../platform/http/envelope.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { PatchPreferencesBody, PreferencesEnvelope, PreferencesQuery } from './preferences.schemas.ts';
import * as service from './preferences.service.ts';

/**
 * My preferences in an organization (`organization_uid`, else my default one): my session, or a key of
 * mine holding `account:read` / `account:write` — a key scoped for invoices must not change how its
 * person is asked for approvals.
 */
export async function preferenceRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const tags = ['Account'];

  app.get(
    '/api/me/preferences',
    {
      schema: {
        operationId: 'getMyPreferences',
        tags,
        summary: 'My preferences in one of my organizations (approval emails)',
        querystring: PreferencesQuery,
        response: { 200: PreferencesEnvelope, ...errorResponses },
      },
      config: { scope: 'account:read', errors: ['not_a_member'] },
    },
    async (request) =>
      envelope(
        await service.getPreferences(db, request.tenant(request.query.organization_uid)),
        'Preferences',
      ),
  );

  app.patch(
    '/api/me/preferences',
    {
      schema: {
        operationId: 'updateMyPreferences',
        tags,
        summary: 'Change my preferences in one of my organizations: approval requests by email',
        body: PatchPreferencesBody,
        response: { 200: PreferencesEnvelope, ...errorResponses },
      },
      config: { scope: 'account:write', errors: ['not_a_member'] },
    },
    async (request) =>
      envelope(
        await service.updatePreferences(db, request.tenant(request.body.organization_uid), request.body),
        'Preferences saved',
      ),
  );
}
