import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { requireUsableChannel, type ChatClient } from '../../platform/chat/chat.ts';
import { requirePermission, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import * as repo from './tenancy.repository.ts';
import { recordUpdate } from '../audit/audit.service.ts';
import type { SearchLanguage } from '../../platform/db/text-search.ts';

/** Approval amount limits in cents (docs/invoices.md#approval-limits); null: unlimited. */
export interface ApprovalLimitsSetting {
  roles: { admin: number | null; member: number | null };
  users: { user_uid: string; limit_cents: number | null }[];
}

export interface OrganizationSettings {
  organization_uid: string;
  segregation_of_duties: boolean;
  require_admin_mfa: boolean;
  slack_channel_id: string | null;
  slack_configured: boolean;
  approval_limits: ApprovalLimitsSetting;
  address: string;
  tax_id: string | null;
  payment_instructions: string;
  search_language: SearchLanguage;
  updated_at: string;
}

export interface OrganizationSettingsChanges {
  segregation_of_duties?: boolean;
  require_admin_mfa?: boolean;
  slack_channel_id?: string | null;
  search_language?: SearchLanguage;
  address?: string;
  tax_id?: string | null;
  payment_instructions?: string;
  approval_limits?: {
    roles?: { admin?: number | null | undefined; member?: number | null | undefined } | undefined;
    users?: { user_uid: string; limit_cents: number | null }[] | undefined;
  };
}

/** The stored setting, read defensively: anything missing is unlimited. */
function approvalLimitsOf(stored: unknown): ApprovalLimitsSetting {
  const value = (stored ?? {}) as Partial<ApprovalLimitsSetting>;
  const limit = (v: unknown) => (typeof v === 'number' ? v : null);
  return {
    roles: { admin: limit(value.roles?.admin), member: limit(value.roles?.member) },
    users: (Array.isArray(value.users) ? value.users : []).map((u) => ({
      user_uid: u.user_uid,
      limit_cents: limit(u.limit_cents),
    })),
  };
}

function view(
  row: {
    uid: string;
    segregationOfDuties: boolean;
    requireAdminMfa: boolean;
    slackChannelId: string | null;
    approvalLimits: unknown;
    address: string;
    taxId: string | null;
    paymentInstructions: string;
    searchLanguage: string;
    updatedAt: Date;
  },
  chat: ChatClient,
): OrganizationSettings {
  return {
    organization_uid: row.uid,
    segregation_of_duties: row.segregationOfDuties,
    require_admin_mfa: row.requireAdminMfa,
    slack_channel_id: row.slackChannelId,
    // The deployment's, not the organization's: whether anything is posted at all (SLACK_BOT_TOKEN).
    slack_configured: chat.kind === 'slack',
    approval_limits: approvalLimitsOf(row.approvalLimits),
    address: row.address,
    tax_id: row.taxId,
    payment_instructions: row.paymentInstructions,
    search_language: row.searchLanguage as SearchLanguage,
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Whether the organization bars the user who entered a payable from approving it. */
export async function segregationOfDuties(db: DbOrTx, organizationUid: string): Promise<boolean> {
  return (await repo.findOrganization(db, organizationUid))?.segregationOfDuties ?? false;
}

/** The organization's approval amount limits (none set: every limit null, unlimited). */
export async function approvalLimits(db: DbOrTx, organizationUid: string): Promise<ApprovalLimitsSetting> {
  return approvalLimitsOf((await repo.findOrganization(db, organizationUid))?.approvalLimits);
}

/**
 * The whole setting from a PATCH (it replaces the stored one; an omitted role is unlimited). Every user
 * named must be a member of the organization, once.
 */
async function checkedApprovalLimits(
  db: DbOrTx,
  organizationUid: string,
  input: NonNullable<OrganizationSettingsChanges['approval_limits']>,
): Promise<ApprovalLimitsSetting> {
  const users = input.users ?? [];
  const seen = new Set<string>();
  const errors: { field: string; message: string }[] = [];
  users.forEach((u, i) => {
    if (seen.has(u.user_uid)) {
      errors.push({ field: `approval_limits.users.${i}.user_uid`, message: 'appears more than once' });
    }
    seen.add(u.user_uid);
  });
  const members = new Set(await repo.membersAmong(db, organizationUid, [...seen]));
  users.forEach((u, i) => {
    if (!members.has(u.user_uid)) {
      errors.push({
        field: `approval_limits.users.${i}.user_uid`,
        message: 'is not a member of this organization',
      });
    }
  });
  if (errors.length > 0) {
    throw new AppError('validation_failed', errors.map((e) => `${e.field} ${e.message}`).join('; '), errors);
  }
  return {
    roles: { admin: input.roles?.admin ?? null, member: input.roles?.member ?? null },
    users: users.map((u) => ({ user_uid: u.user_uid, limit_cents: u.limit_cents })),
  };
}

/** The organization's default chat channel: where agents without a channel of their own post. */
export async function organizationSlackChannel(db: DbOrTx, organizationUid: string): Promise<string | null> {
  return (await repo.findOrganization(db, organizationUid))?.slackChannelId ?? null;
}

/** What an invoice's PDF and hosted page show of the organization that issued it. */
export interface IssuerDetails {
  name: string;
  address: string;
  taxId: string | null;
  paymentInstructions: string;
}

export async function issuerDetails(db: DbOrTx, organizationUid: string): Promise<IssuerDetails> {
  const row = await repo.findOrganization(db, organizationUid);
  if (!row) throw notFound('Organization');
  return {
    name: row.name,
    address: row.address,
    taxId: row.taxId,
    paymentInstructions: row.paymentInstructions,
  };
}

export async function getOrganizationSettings(
  db: Db,
  ctx: RequestContext,
  chat: ChatClient,
): Promise<OrganizationSettings> {
  requirePermission(ctx, 'organization:read');
  const row = await repo.findOrganization(db, ctx.organizationUid);
  if (!row) throw notFound('Organization');
  return view(row, chat);
}

/** Admins only (`organization:write` is a scope only admins hold): the settings are the organization's controls. */
export async function updateOrganizationSettings(
  db: Db,
  ctx: RequestContext,
  chat: ChatClient,
  body: OrganizationSettingsChanges,
): Promise<OrganizationSettings> {
  requirePermission(ctx, 'organization:write');
  const channel = body.slack_channel_id;
  if (typeof channel === 'string') {
    // As an agent's channel: checked with Slack (when configured) only when it changes, and before the
    // transaction opens, since Slack may take its time answering.
    const current = await repo.findOrganization(db, ctx.organizationUid);
    if (!current) throw notFound('Organization');
    if (current.slackChannelId !== channel) await requireUsableChannel(chat, channel, 'slack_channel_id');
  }
  return db.transaction(async (tx) => {
    const before = await repo.findOrganization(tx, ctx.organizationUid, { forUpdate: true });
    const limits =
      body.approval_limits !== undefined
        ? await checkedApprovalLimits(tx, ctx.organizationUid, body.approval_limits)
        : undefined;
    const row = await repo.updateOrganizationSettings(tx, ctx.organizationUid, {
      ...(limits !== undefined ? { approvalLimits: limits } : {}),
      ...(body.segregation_of_duties !== undefined
        ? { segregationOfDuties: body.segregation_of_duties }
        : {}),
      ...(body.require_admin_mfa !== undefined ? { requireAdminMfa: body.require_admin_mfa } : {}),
      ...(channel !== undefined ? { slackChannelId: channel } : {}),
      ...(body.address !== undefined ? { address: body.address.trim() } : {}),
      ...(body.tax_id !== undefined ? { taxId: body.tax_id?.trim() || null } : {}),
      ...(body.payment_instructions !== undefined
        ? { paymentInstructions: body.payment_instructions.trim() }
        : {}),
      // A new language re-indexes the organization's knowledge and documents in this transaction
      // (a trigger of migration 0032).
      ...(body.search_language !== undefined ? { searchLanguage: body.search_language } : {}),
    });
    if (!before || !row) throw notFound('Organization');
    // The organization's controls (segregation of duties, second factor for admins) and where its
    // agents' notifications go: who changed them is audited.
    const audited = (r: typeof row) => ({
      segregationOfDuties: r.segregationOfDuties,
      requireAdminMfa: r.requireAdminMfa,
      slackChannelId: r.slackChannelId,
      approvalLimits: approvalLimitsOf(r.approvalLimits),
      address: r.address,
      taxId: r.taxId,
      paymentInstructions: r.paymentInstructions,
      searchLanguage: r.searchLanguage,
    });
    await recordUpdate(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'organization.settings_changed',
      entityUid: ctx.organizationUid,
      before: audited(before),
      after: audited(row),
    });
    return view(row, chat);
  });
}
