import { Type, type Static } from 'typebox';
import {
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageMeta,
  pageQuery,
  stringEnum,
  Uuid,
} from '../../platform/http/schemas.ts';
import { APPROVER_ROLES } from './approval-policies.tables.ts';

/** The longest delay a policy takes: a year, in minutes. */
export const MAX_POLICY_MINUTES = 525_600;
export const MAX_REQUIRED_APPROVALS = 5;
export const MAX_POLICY_USERS = 50;

export const ApprovalPolicy = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    name: Type.String(),
    agent_uid: Nullable(Uuid),
    tool_type: Nullable(Type.String()),
    min_amount_cents: Nullable(Type.Integer()),
    approver_roles: Type.Array(stringEnum(APPROVER_ROLES)),
    approver_user_uids: Type.Array(Uuid),
    required_approvals: Type.Integer(),
    forbid_initiator: Type.Boolean(),
    require_rejection_reason: Type.Boolean({
      description: 'a rejection needs a reason (resolution_note); default false: the reason is optional',
    }),
    expires_after_minutes: Nullable(Type.Integer()),
    escalate_after_minutes: Nullable(Type.Integer()),
    escalate_to_user_uids: Type.Array(Uuid),
    escalate_to_chat_channel_id: Nullable(Type.String()),
    created_by_uid: Nullable(Uuid),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'ApprovalPolicy', title: 'ApprovalPolicy' },
);

const Name = Type.String({ minLength: 1, maxLength: 128 });
const ToolType = Type.String({ minLength: 1, maxLength: 100, description: 'matches tool_args.type' });
const MinAmount = Type.Integer({
  minimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'matches when tool_args.amount_cents is a number at least this',
});
const Roles = Type.Array(literals(APPROVER_ROLES), { uniqueItems: true, maxItems: APPROVER_ROLES.length });
const Users = Type.Array(Uuid, { uniqueItems: true, maxItems: MAX_POLICY_USERS });
const Required = Type.Integer({ minimum: 1, maximum: MAX_REQUIRED_APPROVALS });
const Minutes = Type.Integer({ minimum: 1, maximum: MAX_POLICY_MINUTES });
const Channel = Type.String({ minLength: 1, maxLength: 255, description: 'a Slack channel id' });

const fields = {
  name: Name,
  agent_uid: Nullable(Uuid),
  tool_type: Nullable(ToolType),
  min_amount_cents: Nullable(MinAmount),
  approver_roles: Roles,
  approver_user_uids: Users,
  required_approvals: Required,
  forbid_initiator: Type.Boolean(),
  require_rejection_reason: Type.Boolean(),
  expires_after_minutes: Nullable(Minutes),
  escalate_after_minutes: Nullable(Minutes),
  escalate_to_user_uids: Users,
  escalate_to_chat_channel_id: Nullable(Channel),
};

export const CreatePolicyBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    name: fields.name,
    agent_uid: Type.Optional(fields.agent_uid),
    tool_type: Type.Optional(fields.tool_type),
    min_amount_cents: Type.Optional(fields.min_amount_cents),
    approver_roles: Type.Optional(fields.approver_roles),
    approver_user_uids: Type.Optional(fields.approver_user_uids),
    required_approvals: Type.Optional(fields.required_approvals),
    forbid_initiator: Type.Optional(fields.forbid_initiator),
    require_rejection_reason: Type.Optional(fields.require_rejection_reason),
    expires_after_minutes: Type.Optional(fields.expires_after_minutes),
    escalate_after_minutes: Type.Optional(fields.escalate_after_minutes),
    escalate_to_user_uids: Type.Optional(fields.escalate_to_user_uids),
    escalate_to_chat_channel_id: Type.Optional(fields.escalate_to_chat_channel_id),
  },
  { additionalProperties: false },
);
export type CreatePolicyBodyT = Static<typeof CreatePolicyBody>;

export const UpdatePolicyBody = Type.Object(
  {
    name: Type.Optional(fields.name),
    agent_uid: Type.Optional(fields.agent_uid),
    tool_type: Type.Optional(fields.tool_type),
    min_amount_cents: Type.Optional(fields.min_amount_cents),
    approver_roles: Type.Optional(fields.approver_roles),
    approver_user_uids: Type.Optional(fields.approver_user_uids),
    required_approvals: Type.Optional(fields.required_approvals),
    forbid_initiator: Type.Optional(fields.forbid_initiator),
    require_rejection_reason: Type.Optional(fields.require_rejection_reason),
    expires_after_minutes: Type.Optional(fields.expires_after_minutes),
    escalate_after_minutes: Type.Optional(fields.escalate_after_minutes),
    escalate_to_user_uids: Type.Optional(fields.escalate_to_user_uids),
    escalate_to_chat_channel_id: Type.Optional(fields.escalate_to_chat_channel_id),
  },
  { minProperties: 1, additionalProperties: false },
);
export type UpdatePolicyBodyT = Static<typeof UpdatePolicyBody>;

export const PolicyParams = Type.Object({ uid: Uuid });
export const PolicyQuery = Type.Object({ organization_uid: Type.Optional(Uuid) });
export const ListPoliciesQuery = Type.Object({ organization_uid: Type.Optional(Uuid), ...pageQuery(25) });

export const PolicyEnvelope = Envelope(Type.Ref('ApprovalPolicy'));
export const PolicyListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('ApprovalPolicy')), _meta: PageMeta }),
);
