import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { issueApiKey } from '../api-keys/api-keys.service.ts';
import type { Role } from '../../platform/http/scopes.ts';
import * as repo from './tenancy.repository.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normalizeEmail(email: string): string {
  const normalized = email.trim().toLowerCase();
  if (!EMAIL.test(normalized)) throw new AppError('validation_failed', `"${email}" is not an email address`);
  return normalized;
}

/** The user with that email, created when new; an existing user keeps their name. */
async function ensureUser(tx: DbOrTx, email: string, fullName: string | undefined) {
  const existing = await repo.findUserByEmail(tx, email);
  if (existing) return existing;
  return repo.insertUser(tx, email, fullName ?? '');
}

/** Adds the membership; the first organization a user joins becomes their default one. */
export async function joinOrganization(tx: DbOrTx, organizationUid: string, userUid: string, role: Role) {
  const isDefault = !(await repo.userHasDefaultMembership(tx, userUid));
  return repo.insertMembership(tx, organizationUid, userUid, role, isDefault);
}

export interface InitInput {
  organizationName: string;
  email: string;
  fullName?: string | undefined;
}

/** `remit init`: an organization, its admin and a full-access key, all or nothing. */
export async function initOrganization(db: Db, pepper: string | undefined, input: InitInput) {
  const name = input.organizationName.trim();
  if (name.length === 0) throw new AppError('validation_failed', 'The organization needs a name');
  const email = normalizeEmail(input.email);
  return db.transaction(async (tx) => {
    const organization = await repo.insertOrganization(tx, name);
    const user = await ensureUser(tx, email, input.fullName);
    await joinOrganization(tx, organization.uid, user.uid, 'admin');
    const { key } = await issueApiKey(tx, pepper, {
      organizationUid: organization.uid,
      userUid: user.uid,
      name: 'Initial admin key',
      scopes: null,
    });
    return { organization_uid: organization.uid, user_uid: user.uid, api_key: key };
  });
}

export interface AddUserInput {
  organizationUid: string;
  email: string;
  fullName?: string | undefined;
  role: Role;
}

/** `remit users create`: a new user, or a new membership for an existing email, with a full-access key. */
export async function addUserToOrganization(db: Db, pepper: string | undefined, input: AddUserInput) {
  const email = normalizeEmail(input.email);
  return db.transaction(async (tx) => {
    const organization = await repo.findOrganization(tx, input.organizationUid);
    if (!organization) throw notFound('Organization');
    const user = await ensureUser(tx, email, input.fullName);
    if (await repo.findMembership(tx, organization.uid, user.uid)) {
      throw new AppError('already_exists', `${email} is already a member of this organization`);
    }
    await joinOrganization(tx, organization.uid, user.uid, input.role);
    const { key } = await issueApiKey(tx, pepper, {
      organizationUid: organization.uid,
      userUid: user.uid,
      name: `${input.role === 'admin' ? 'Admin' : 'Member'} key`,
      scopes: null,
    });
    return { user_uid: user.uid, api_key: key };
  });
}

// ---- memberships, for the people module (members and invitations) ----

export const findOrganization = repo.findOrganization;
export const findUserByEmail = repo.findUserByEmail;
export const findMembership = repo.findMembership;
export const lockAdminMemberships = repo.lockAdminMemberships;
export const updateMembershipRole = repo.updateMembershipRole;
export const deleteMembership = repo.deleteMembership;

/** A new user (no membership yet); the email must be normalized and not taken (users_email_key). */
export async function createUser(tx: DbOrTx, email: string, fullName: string) {
  return repo.insertUser(tx, email, fullName);
}
