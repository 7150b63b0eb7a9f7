import { Type } from 'typebox';
import {
  DateTime,
  Envelope,
  Nullable,
  PageMeta,
  pageQuery,
  stringEnum,
  Uuid,
} from '../../platform/http/schemas.ts';
import { SCOPES } from '../../platform/http/scopes.ts';

export const ApiKey = Type.Object(
  {
    uid: Uuid,
    name: Type.String(),
    key_snippet: Type.String({ description: '`rk_live_...` and the last 4 characters of the key' }),
    user_uid: Uuid,
    organization_uid: Uuid,
    scopes: Type.Array(Type.String(), { description: "Empty: full access within the user's role" }),
    last_used_at: Nullable(DateTime),
    expires_at: Nullable(DateTime),
    revoked_at: Nullable(DateTime),
    created_at: DateTime,
    updated_at: DateTime,
    key: Type.Optional(Type.String({ description: 'The full key; only in the create response, shown once' })),
  },
  { $id: 'ApiKey' },
);

export const CreateApiKeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  scopes: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), {
      maxItems: 100,
      description: `Omit (or send []) for full access. Known scopes: ${SCOPES.join(', ')}`,
    }),
  ),
  expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 36500 })),
  organization_uid: Type.Optional(Uuid),
  user_uid: Type.Optional({
    ...Uuid,
    description: 'Admins: issue the key to another member of the organization (default: the caller)',
  }),
});

export const ListApiKeysQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  ...pageQuery(25),
});

export const ApiKeyParams = Type.Object({ uid: Uuid });
export const OrganizationQuery = Type.Object({ organization_uid: Type.Optional(Uuid) });

export const ApiKeyScope = Type.Object({
  scope: stringEnum(SCOPES, { description: 'The name to send in `scopes` when creating a key' }),
  description: Type.String({ description: 'What the scope allows, in words' }),
  admin_only: Type.Boolean({
    description: "Held by admins only: a member's key never grants it, and a member cannot grant it",
  }),
});

export const ApiKeyEnvelope = Envelope(Type.Ref('ApiKey'));
export const ApiKeyScopesEnvelope = Envelope(Type.Object({ items: Type.Array(ApiKeyScope) }));
export const ApiKeyListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('ApiKey')), _meta: PageMeta }),
);
