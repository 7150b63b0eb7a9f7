import type { DbOrTx } from '../../platform/db/client.ts';
import type { AuditActor, RequestContext } from '../../platform/http/context.ts';
import { findOrganization } from './tenancy.repository.ts';

/**
 * The context a background actor (an agent run, a scheduled job) works in: one organization, admin
 * rights inside it and nothing outside it. Services take it exactly like a request's, so every entry
 * point goes through the same use cases and the same tenant filter. `actor.uid` and `name` are the user
 * it acts as (an agent's creator); `auditActor` is what the audit log records (the agent run).
 */
export async function systemContext(
  db: DbOrTx,
  organizationUid: string,
  actor: { uid: string; name: string; auditActor: AuditActor },
  requestId: string,
): Promise<RequestContext> {
  const organization = await findOrganization(db, organizationUid);
  if (!organization) throw new Error(`Organization ${organizationUid} does not exist`);
  return {
    organizationUid,
    role: 'admin',
    requestId,
    clientAddress: null,
    actor: actor.auditActor,
    principal: {
      credential: { kind: 'system', uid: actor.uid, organizationUid },
      scopes: null,
      user: { uid: actor.uid, id: 0, email: '', fullName: actor.name, avatarUrl: null },
      memberships: [{ organizationUid, organizationName: organization.name, role: 'admin', isDefault: true }],
    },
  };
}
