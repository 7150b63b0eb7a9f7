import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { issueApiKey, issueMemberKey, listMemberKeys } from '../api-keys/api-keys.service.ts';
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

/** The user with that email and their memberships (one organization's, when given). */
async function findMember(tx: DbOrTx, email: string, organizationUid: string | undefined) {
  const user = await repo.findUserByEmail(tx, email);
  if (!user) throw new AppError('not_found', `No user has the email ${email}`);
  const memberships = (await repo.listMembershipsOfUser(tx, user.uid)).filter(
    (m) => organizationUid === undefined || m.organizationUid === organizationUid,
  );
  if (memberships.length === 0) {
    throw new AppError(
      'not_found',
      organizationUid === undefined
        ? `${email} is not a member of any organization`
        : `${email} is not a member of organization ${organizationUid}`,
    );
  }
  return { user, memberships };
}

export interface CreateMemberKeyInput {
  email: string;
  /** Default: the user's default organization. */
  organizationUid?: string | undefined;
  name: string;
  scopes?: string[] | undefined;
  expiresInDays?: number | undefined;
}

/**
 * `remit keys create`: a new key for an existing member (shown once), through the same issuing as every
 * other key. Its scopes stay within the member's role in that organization.
 */
export async function createMemberKey(db: Db, pepper: string | undefined, input: CreateMemberKeyInput) {
  const email = normalizeEmail(input.email);
  return db.transaction(async (tx) => {
    const { user, memberships } = await findMember(tx, email, input.organizationUid);
    const membership = memberships[0]!; // the one asked for, or the default organization
    return issueMemberKey(tx, pepper, {
      organizationUid: membership.organizationUid,
      userUid: user.uid,
      role: membership.role,
      name: input.name,
      scopes: input.scopes,
      expiresInDays: input.expiresInDays,
    });
  });
}

/** `remit keys list`: a member's keys, in every organization of theirs or in one. */
export async function listKeysOfMember(
  db: Db,
  input: { email: string; organizationUid?: string | undefined },
) {
  const email = normalizeEmail(input.email);
  const { user, memberships } = await findMember(db, email, input.organizationUid);
  const keys = [];
  for (const m of memberships) keys.push(...(await listMemberKeys(db, m.organizationUid, user.uid)));
  return { user_uid: user.uid, keys };
}

// ---- memberships, for the people module (members and invitations) ----

export const findOrganization = repo.findOrganization;
export const findUserByEmail = repo.findUserByEmail;
export const findMembership = repo.findMembership;
export const lockAdminMemberships = repo.lockAdminMemberships;
/** The organization's admins, for notices the service sends them (a webhook endpoint disabled). */
export const listAdminContacts = repo.listAdminContacts;
export const updateMembershipRole = repo.updateMembershipRole;
export const deleteMembership = repo.deleteMembership;

/** A new user (no membership yet); the email must be normalized and not taken (users_email_key). */
export async function createUser(tx: DbOrTx, email: string, fullName: string) {
  return repo.insertUser(tx, email, fullName);
}
