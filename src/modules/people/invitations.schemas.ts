import { Type, type Static } from 'typebox';
import {
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageMeta,
  pageQuery,
  Uuid,
} from '../../platform/http/schemas.ts';
import { INVITATION_STATUSES } from './invitations.tables.ts';
import { RoleSchema } from './members.schemas.ts';

/** What an admin sees of an invitation: never its token (only its hash is stored). */
export const Invitation = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    email: Type.String(),
    role: RoleSchema,
    status: literals(INVITATION_STATUSES),
    invited_by_user_uid: Nullable(Uuid),
    expires_at: DateTime,
    last_sent_at: DateTime,
    accepted_at: Nullable(DateTime),
    accepted_by_user_uid: Nullable(Uuid),
    revoked_at: Nullable(DateTime),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'Invitation' },
);

export const InvitationParams = Type.Object({ organization_uid: Uuid, uid: Uuid });

export const ListInvitationsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  status: Type.Optional(literals(INVITATION_STATUSES)),
  ...pageQuery(25),
});
export type ListInvitationsQueryT = Static<typeof ListInvitationsQuery>;

export const CreateInvitationBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 254 }),
    role: RoleSchema,
  },
  { additionalProperties: false },
);
export type CreateInvitationBodyT = Static<typeof CreateInvitationBody>;

/** The emailed token: 32 random bytes in base64url (43 characters); any other length is simply unknown. */
const Token = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' });

export const TokenParams = Type.Object({ token: Token });

/** What the person holding the link sees before accepting it. */
export const PresentedInvitation = Type.Object({
  organization_uid: Uuid,
  organization_name: Type.String(),
  email: Type.String(),
  role: RoleSchema,
  expires_at: DateTime,
  invited_by_name: Nullable(Type.String()),
  account_exists: Type.Boolean({
    description:
      'true: a user with this email exists and accepts while signed in as that user; false: accepting creates the user (full_name, password)',
  }),
});

export const AcceptInvitationBody = Type.Object(
  {
    token: Token,
    full_name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'New users only: required' }),
    ),
    password: Type.Optional(
      Type.String({
        maxLength: 1024,
        description: 'New users only: required, 12 to 256 characters, not the email address',
      }),
    ),
  },
  { additionalProperties: false },
);
export type AcceptInvitationBodyT = Static<typeof AcceptInvitationBody>;

export const AcceptedInvitation = Type.Object({
  organization_uid: Uuid,
  organization_name: Type.String(),
  role: RoleSchema,
  user_uid: Uuid,
  email: Type.String(),
  account_created: Type.Boolean({ description: 'true when accepting created the user' }),
});

export const InvitationEnvelope = Envelope(Type.Ref('Invitation'));
export const InvitationListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('Invitation')), _meta: PageMeta }),
);
export const PresentedInvitationEnvelope = Envelope(PresentedInvitation);
export const AcceptedInvitationEnvelope = Envelope(AcceptedInvitation);
