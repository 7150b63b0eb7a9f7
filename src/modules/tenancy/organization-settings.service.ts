import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { requireAdmin, type RequestContext } from '../../platform/http/context.ts';
import { notFound } from '../../platform/http/errors.ts';
import * as repo from './tenancy.repository.ts';
import { recordUpdate } from '../audit/audit.service.ts';

export interface OrganizationSettings {
  organization_uid: string;
  segregation_of_duties: boolean;
  require_admin_mfa: boolean;
  updated_at: string;
}

function view(row: {
  uid: string;
  segregationOfDuties: boolean;
  requireAdminMfa: boolean;
  updatedAt: Date;
}): OrganizationSettings {
  return {
    organization_uid: row.uid,
    segregation_of_duties: row.segregationOfDuties,
    require_admin_mfa: row.requireAdminMfa,
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Whether the organization bars the user who entered a payable from approving it. */
export async function segregationOfDuties(db: DbOrTx, organizationUid: string): Promise<boolean> {
  return (await repo.findOrganization(db, organizationUid))?.segregationOfDuties ?? false;
}

export async function getOrganizationSettings(db: Db, ctx: RequestContext): Promise<OrganizationSettings> {
  const row = await repo.findOrganization(db, ctx.organizationUid);
  if (!row) throw notFound('Organization');
  return view(row);
}

/** Admins only: the settings are the organization's controls. */
export async function updateOrganizationSettings(
  db: Db,
  ctx: RequestContext,
  body: { segregation_of_duties?: boolean; require_admin_mfa?: boolean },
): Promise<OrganizationSettings> {
  requireAdmin(ctx);
  return db.transaction(async (tx) => {
    const before = await repo.findOrganization(tx, ctx.organizationUid, { forUpdate: true });
    const row = await repo.updateOrganizationSettings(tx, ctx.organizationUid, {
      ...(body.segregation_of_duties !== undefined
        ? { segregationOfDuties: body.segregation_of_duties }
        : {}),
      ...(body.require_admin_mfa !== undefined ? { requireAdminMfa: body.require_admin_mfa } : {}),
    });
    if (!before || !row) throw notFound('Organization');
    // The organization's controls (segregation of duties, second factor for admins): who turned them
    // on or off is audited.
    await recordUpdate(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'organization.settings_changed',
      entityUid: ctx.organizationUid,
      before: { segregationOfDuties: before.segregationOfDuties, requireAdminMfa: before.requireAdminMfa },
      after: { segregationOfDuties: row.segregationOfDuties, requireAdminMfa: row.requireAdminMfa },
    });
    return view(row);
  });
}
