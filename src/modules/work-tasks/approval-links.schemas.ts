import { Type, type Static } from 'typebox';
import { DateTime, Envelope, literals, Nullable, Uuid } from '../../platform/http/schemas.ts';
import { MAX_TOKEN_LENGTH } from './approval-links.ts';

/** The token of an emailed approval link: base64url payload, a dot, base64url signature. */
const LinkToken = Type.String({
  minLength: 1,
  maxLength: MAX_TOKEN_LENGTH,
  pattern: '^[A-Za-z0-9_.-]+$',
  description: 'The `token` of the emailed link (`/approval?token=…`)',
});

export const LookUpLinkBody = Type.Object({ token: LinkToken }, { additionalProperties: false });
export type LookUpLinkBodyT = Static<typeof LookUpLinkBody>;

export const DecideByLinkBody = Type.Object(
  {
    token: LinkToken,
    action: literals(['approve', 'reject'] as const),
    resolution_note: Type.Optional(
      Type.String({
        maxLength: 2000,
        description:
          'The reason of a rejection (optional unless the approval policy requires one); a note with an approval',
      }),
    ),
    args_revision: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2_147_483_647,
        description:
          'The `task.args_revision` the page showed: when the arguments changed since, nothing is decided (409 approval_changed)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type DecideByLinkBodyT = Static<typeof DecideByLinkBody>;

const InvoiceFacts = Type.Object({
  uid: Uuid,
  invoice_number: Type.String(),
  invoice_type: Type.String(),
  status: Type.String(),
  currency: Type.String(),
  total_cents: Type.Integer(),
  amount_remaining_cents: Type.Integer(),
  due_date: Nullable(DateTime),
  overdue_days: Type.Integer(),
  counterparty_name: Nullable(
    Type.String({ description: 'The client of a receivable, the vendor of a payable' }),
  ),
});

/** What the confirmation page shows: an allow-list, so nothing else of the task leaves by this door. */
export const ApprovalLink = Type.Object(
  {
    task: Type.Object({
      uid: Uuid,
      organization_uid: Uuid,
      organization_name: Type.String(),
      title: Type.String(),
      status: Type.String(),
      priority: Type.String(),
      created_at: DateTime,
      agent: Nullable(Type.Object({ uid: Uuid, name: Type.String() })),
      tool: Type.String({ description: 'The tool the agent wants to run (`tool_args.type`)' }),
      tool_args: Type.Record(Type.String(), Type.Unknown()),
      args_revision: Type.Integer({
        description: 'The version of `tool_args`: send it back with the decision to decide what was shown',
      }),
      reasoning: Type.String(),
      trigger_type: Nullable(Type.String()),
      resolution: Nullable(literals(['approved', 'rejected'] as const)),
      resolved_at: Nullable(DateTime),
      resolved_by: Nullable(Type.Object({ user_uid: Uuid, user_name: Type.String() })),
      resolution_note: Nullable(Type.String()),
    }),
    invoices: Type.Array(InvoiceFacts, {
      description: 'The invoices the approval is about, as far as the link’s person may see them',
    }),
    link: Type.Object({
      user: Type.Object(
        { uid: Uuid, full_name: Type.String(), email: Type.String() },
        { description: 'Whom the link is for: the decision is taken as this person' },
      ),
      expires_at: DateTime,
      used_at: Nullable(DateTime),
      used_action: Nullable(literals(['approve', 'reject'] as const)),
    }),
    warning: Nullable(
      Type.String({ description: 'After an approval: why no follow-up run was started, when none was' }),
    ),
  },
  { $id: 'ApprovalLink', title: 'ApprovalLink' },
);

export const ApprovalLinkEnvelope = Envelope(Type.Ref('ApprovalLink'));
