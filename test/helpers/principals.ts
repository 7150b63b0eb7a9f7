import crypto from 'node:crypto';
import { issueApiKey } from '../../src/modules/api-keys/api-keys.service.ts';
import type { Scope } from '../../src/platform/http/scopes.ts';
import { addUserToOrganization, initOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import type { TestApp } from './app.ts';

export interface OrgPrincipals {
  uid: string;
  name: string;
  admin: { userUid: string; key: string; email: string };
  member: { userUid: string; key: string; email: string };
}

export interface Principals {
  orgA: OrgPrincipals;
  /** Another tenant: its data must never be visible to orgA's callers. */
  orgB: OrgPrincipals;
  /** A key of orgA's admin (or member) holding exactly these scopes. */
  keyWithScopes(scopes: Scope[], who?: 'admin' | 'member'): Promise<string>;
}

async function organization(t: TestApp, label: string): Promise<OrgPrincipals> {
  const tag = crypto.randomBytes(4).toString('hex');
  const pepper = t.config.apiKeyPepper;
  const adminEmail = `admin-${tag}@${label.toLowerCase()}.test`;
  const memberEmail = `member-${tag}@${label.toLowerCase()}.test`;
  const init = await initOrganization(t.db, pepper, {
    organizationName: `Org ${label}`,
    email: adminEmail,
    fullName: `${label} Admin`,
  });
  const member = await addUserToOrganization(t.db, pepper, {
    organizationUid: init.organization_uid,
    email: memberEmail,
    fullName: `${label} Member`,
    role: 'member',
  });
  return {
    uid: init.organization_uid,
    name: `Org ${label}`,
    admin: { userUid: init.user_uid, key: init.api_key, email: adminEmail },
    member: { userUid: member.user_uid, key: member.api_key, email: memberEmail },
  };
}

/** Two organizations, each with an admin and a member, and a factory for scoped keys. */
export async function createPrincipals(t: TestApp): Promise<Principals> {
  const orgA = await organization(t, 'A');
  const orgB = await organization(t, 'B');
  return {
    orgA,
    orgB,
    keyWithScopes: async (scopes, who = 'admin') => {
      const { key } = await issueApiKey(t.db, t.config.apiKeyPepper, {
        organizationUid: orgA.uid,
        userUid: who === 'admin' ? orgA.admin.userUid : orgA.member.userUid,
        name: `scoped ${scopes.join(' ')}`,
        scopes,
      });
      return key;
    },
  };
}
