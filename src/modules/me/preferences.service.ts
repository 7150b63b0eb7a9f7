import type { Db } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { notFound } from '../../platform/http/errors.ts';
import * as repo from './preferences.repository.ts';
import type { PatchPreferencesBodyT, PreferencesT } from './preferences.schemas.ts';

/**
 * A person's own settings in one of their organizations, kept on their membership: read and written by
 * that person only (any key of theirs, or their session), never by an admin for them. Leaving the
 * organization removes them with the membership.
 */
function view(ctx: RequestContext, approvalEmails: boolean): PreferencesT {
  const membership = ctx.principal.memberships.find((m) => m.organizationUid === ctx.organizationUid);
  return {
    organization_uid: ctx.organizationUid,
    organization_name: membership?.organizationName ?? '',
    approval_emails: approvalEmails,
  };
}

export async function getPreferences(db: Db, ctx: RequestContext): Promise<PreferencesT> {
  const row = await repo.findPreferences(db, ctx.organizationUid, ctx.principal.user.uid);
  if (!row) throw notFound('Membership');
  return view(ctx, row.approvalEmails);
}

export async function updatePreferences(
  db: Db,
  ctx: RequestContext,
  body: PatchPreferencesBodyT,
): Promise<PreferencesT> {
  const row = await repo.updatePreferences(db, ctx.organizationUid, ctx.principal.user.uid, {
    approvalEmails: body.approval_emails,
  });
  if (!row) throw notFound('Membership');
  return view(ctx, row.approvalEmails);
}
