import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { agents } from '../agents/agents.tables.ts';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

export const APPROVER_ROLES = ['admin', 'member'] as const;
export type ApproverRole = (typeof APPROVER_ROLES)[number];

/**
 * An organization's approval policy (docs/approvals.md; migration 0022): which approvals it governs
 * (an agent, a tool, an amount) and the rules they are decided by. Its rules are copied onto each task
 * raised under it.
 */
export const approvalPolicies = pgTable(
  'approval_policies',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Null: every agent of the organization. */
    agentUid: uuid('agent_uid').references(() => agents.uid, { onDelete: 'cascade' }),
    /** Null: any tool; else `tool_args.type`. */
    toolType: text('tool_type'),
    /** Null: any amount; else `tool_args.amount_cents` must be a number at least this. */
    minAmountCents: bigint('min_amount_cents', { mode: 'number' }),
    approverRoles: text('approver_roles', { enum: APPROVER_ROLES })
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    approverUserUids: uuid('approver_user_uids')
      .array()
      .notNull()
      .default(sql`'{}'::uuid[]`),
    requiredApprovals: integer('required_approvals').notNull().default(1),
    forbidInitiator: boolean('forbid_initiator').notNull().default(false),
    /** Opt-in (migration 0037): a rejection of an approval it governs needs a reason. */
    requireRejectionReason: boolean('require_rejection_reason').notNull().default(false),
    expiresAfterMinutes: integer('expires_after_minutes'),
    escalateAfterMinutes: integer('escalate_after_minutes'),
    escalateToUserUids: uuid('escalate_to_user_uids')
      .array()
      .notNull()
      .default(sql`'{}'::uuid[]`),
    escalateToChatChannelId: text('escalate_to_chat_channel_id'),
    createdByUid: uuid('created_by_uid'),
    ...timestamps,
  },
  (t) => [index('approval_policies_org_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc())],
);
