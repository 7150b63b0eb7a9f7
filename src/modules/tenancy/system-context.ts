import type { DbOrTx } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { findOrganization } from './tenancy.repository.ts';

/**
 * The context a background actor (an agent run, a scheduled job) works in: one organization, admin
 * rights inside it and nothing outside it. Services take it exactly like a request's, so every entry
 * point goes through the same use cases and the same tenant filter.
 */
export async function systemContext(
  db: DbOrTx,
  organizationUid: string,
  actor: { uid: string; name: string },
  requestId: string,
): Promise<RequestContext> {
  const organization = await findOrganization(db, organizationUid);
  if (!organization) throw new Error(`Organization ${organizationUid} does not exist`);
  return {
    organizationUid,
    role: 'admin',
    requestId,
    principal: {
      credential: { kind: 'system', uid: actor.uid, organizationUid },
      scopes: null,
      user: { uid: actor.uid, id: 0, email: '', fullName: actor.name, avatarUrl: null },
      memberships: [{ organizationUid, organizationName: organization.name, role: 'admin', isDefault: true }],
    },
  };
}
