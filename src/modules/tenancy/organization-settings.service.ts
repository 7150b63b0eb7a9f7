import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { requireUsableChannel, type ChatClient } from '../../platform/chat/chat.ts';
import { requirePermission, type RequestContext } from '../../platform/http/context.ts';
import { notFound } from '../../platform/http/errors.ts';
import * as repo from './tenancy.repository.ts';
import { recordUpdate } from '../audit/audit.service.ts';
import type { SearchLanguage } from '../../platform/db/text-search.ts';

export interface OrganizationSettings {
  organization_uid: string;
  segregation_of_duties: boolean;
  require_admin_mfa: boolean;
  slack_channel_id: string | null;
  slack_configured: boolean;
  search_language: SearchLanguage;
  updated_at: string;
}

export interface OrganizationSettingsChanges {
  segregation_of_duties?: boolean;
  require_admin_mfa?: boolean;
  slack_channel_id?: string | null;
  search_language?: SearchLanguage;
}

function view(
  row: {
    uid: string;
    segregationOfDuties: boolean;
    requireAdminMfa: boolean;
    slackChannelId: string | null;
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
    search_language: row.searchLanguage as SearchLanguage,
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Whether the organization bars the user who entered a payable from approving it. */
export async function segregationOfDuties(db: DbOrTx, organizationUid: string): Promise<boolean> {
  return (await repo.findOrganization(db, organizationUid))?.segregationOfDuties ?? false;
}

/** The organization's default chat channel: where agents without a channel of their own post. */
export async function organizationSlackChannel(db: DbOrTx, organizationUid: string): Promise<string | null> {
  return (await repo.findOrganization(db, organizationUid))?.slackChannelId ?? null;
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
    const row = await repo.updateOrganizationSettings(tx, ctx.organizationUid, {
      ...(body.segregation_of_duties !== undefined
        ? { segregationOfDuties: body.segregation_of_duties }
        : {}),
      ...(body.require_admin_mfa !== undefined ? { requireAdminMfa: body.require_admin_mfa } : {}),
      ...(channel !== undefined ? { slackChannelId: channel } : {}),
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
