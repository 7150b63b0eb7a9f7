import { Type, type Static } from 'typebox';
import { DateTime, Envelope, Nullable, PageMeta, pageQuery, Uuid } from '../../platform/http/schemas.ts';

export const BillingContact = Type.Object(
  {
    uid: Uuid,
    party_uid: Uuid,
    name: Type.String(),
    title: Type.String(),
    email: Type.String(),
    phone: Type.String(),
  },
  { $id: 'BillingContact' },
);

export const Party = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    name: Type.String(),
    role: Type.Union([Type.Literal('client'), Type.Literal('vendor')]),
    address: Type.String(),
    tax_id: Nullable(Type.String()),
    billing_contact: Nullable(Type.Ref('BillingContact')),
    archived_at: Type.Union([DateTime, Type.Null()], {
      description: 'When the party was archived (POST /api/parties/{uid}/archive); null while it is active',
    }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'Party' },
);

const ContactInput = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255 })),
  title: Type.Optional(Type.String({ maxLength: 255 })),
  email: Type.Optional(Type.Union([Type.Literal(''), Type.String({ format: 'email', maxLength: 320 })])),
  phone: Type.Optional(Type.String({ maxLength: 64 })),
});
export type ContactInputT = Static<typeof ContactInput>;

export const CreatePartyBody = Type.Object({
  organization_uid: Type.Optional(Uuid),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  role: Type.Union([Type.Literal('client'), Type.Literal('vendor')]),
  address: Type.Optional(Type.String({ maxLength: 2000 })),
  tax_id: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  billing_contact: Type.Optional(Nullable(ContactInput)),
});
export type CreatePartyBodyT = Static<typeof CreatePartyBody>;

export const PatchPartyBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  role: Type.Optional(Type.Union([Type.Literal('client'), Type.Literal('vendor')])),
  address: Type.Optional(Type.String({ maxLength: 2000 })),
  tax_id: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  billing_contact: Type.Optional(Nullable(ContactInput)),
});
export type PatchPartyBodyT = Static<typeof PatchPartyBody>;

export const ListPartiesQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  role: Type.Optional(Type.Union([Type.Literal('client'), Type.Literal('vendor')])),
  archived: Type.Optional(
    Type.Boolean({
      description: 'true: archived parties only; false: active ones only (omitted: see include_archived)',
    }),
  ),
  include_archived: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'With `archived` omitted: true lists active and archived parties, false (default) active only',
    }),
  ),
  ...pageQuery(25),
});

export const UidParams = Type.Object({ uid: Uuid });
export const PartyEnvelope = Envelope(Type.Ref('Party'));
export const PartyListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('Party')), _meta: PageMeta }),
);
