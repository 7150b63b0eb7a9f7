import { Type } from 'typebox';
import { envelope } from '../../platform/http/envelope.ts';
import { resolveMembership } from '../../platform/http/context.ts';
import { Envelope, errorResponses, Nullable, Uuid } from '../../platform/http/schemas.ts';
import type { App } from '../../platform/http/types.ts';

const Me = Type.Object({
  user: Type.Object({
    uid: Uuid,
    id: Type.Integer(),
    email: Type.String(),
    full_name: Type.String(),
    avatar_url: Nullable(Type.String()),
  }),
  memberships: Type.Array(
    Type.Object({
      organization_uid: Uuid,
      organization_name: Type.String(),
      role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
      is_default: Type.Boolean(),
    }),
  ),
  default_organization_uid: Nullable(Uuid),
  authenticated_with: Type.Union([Type.Literal('api_key'), Type.Literal('session')]),
  /** The key of this request; null when signed in with a session. */
  api_key: Nullable(
    Type.Object({
      uid: Uuid,
      organization_uid: Uuid,
      scopes: Type.Array(Type.String(), { description: 'Empty: full access within the role' }),
    }),
  ),
  /** The sign-in session of this request; null with an API key. */
  session: Nullable(Type.Object({ uid: Uuid })),
  scopes: Type.Array(Type.String()),
});

export async function meRoutes(app: App) {
  app.get(
    '/api/me',
    {
      schema: {
        operationId: 'getMe',
        tags: ['Account'],
        summary: "The calling user, their organizations and the key's scopes",
        response: { 200: Envelope(Me), ...errorResponses },
      },
    },
    // Everything here came with authentication: no further database read.
    async (request) => {
      const p = request.principal!;
      const defaultOrganization = p.memberships.length > 0 ? resolveMembership(p).organizationUid : null;
      return envelope(
        {
          user: {
            uid: p.user.uid,
            id: p.user.id,
            email: p.user.email,
            full_name: p.user.fullName,
            avatar_url: p.user.avatarUrl,
          },
          memberships: p.memberships.map((m) => ({
            organization_uid: m.organizationUid,
            organization_name: m.organizationName,
            role: m.role,
            is_default: m.isDefault,
          })),
          default_organization_uid: defaultOrganization,
          authenticated_with: p.credential.kind === 'session' ? 'session' : 'api_key',
          api_key:
            p.credential.kind === 'api_key'
              ? {
                  uid: p.credential.uid,
                  organization_uid: p.credential.organizationUid!,
                  scopes: p.scopes ?? [],
                }
              : null,
          session: p.credential.kind === 'session' ? { uid: p.credential.uid } : null,
          scopes: p.scopes ?? [],
        },
        'Current user',
      );
    },
  );
}
