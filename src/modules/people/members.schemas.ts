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

export const ROLES = ['admin', 'member'] as const;
export const RoleSchema = literals(ROLES);

export const Member = Type.Object(
  {
    user_uid: Uuid,
    user_id: Type.Integer({ description: "The user's integer id (interface 2.11)" }),
    email: Type.String(),
    full_name: Type.String(),
    avatar_url: Nullable(Type.String()),
    role: RoleSchema,
    joined_at: DateTime,
    last_active_at: Nullable(
      Type.String({
        format: 'date-time',
        description:
          "The latest use of the member's API keys in this organization or of their sign-in sessions (up to a minute behind); null: never",
      }),
    ),
  },
  { $id: 'Member' },
);

export const OrganizationParams = Type.Object({ organization_uid: Uuid });
export const MemberParams = Type.Object({ organization_uid: Uuid, user_uid: Uuid });

export const ListMembersQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  role: Type.Optional(RoleSchema),
  ...pageQuery(25),
});
export type ListMembersQueryT = Static<typeof ListMembersQuery>;

export const ChangeRoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false });
export type ChangeRoleBodyT = Static<typeof ChangeRoleBody>;

export const RemovedMember = Type.Object({
  user_uid: Uuid,
  email: Type.String(),
  role: RoleSchema,
  revoked_api_keys: Type.Integer({ description: "The member's keys of this organization revoked now" }),
  unassigned_work_tasks: Type.Integer({ description: 'Their open work tasks, now unassigned' }),
});

export const MemberEnvelope = Envelope(Type.Ref('Member'));
export const MemberListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('Member')), _meta: PageMeta }),
);
export const RemovedMemberEnvelope = Envelope(RemovedMember);
