import crypto from 'node:crypto';
import type { Database, Db, DbOrTx } from '../../platform/db/client.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import {
  contextFor,
  type CallOrigin,
  type Membership,
  type Principal,
  type RequestContext,
} from '../../platform/http/context.ts';
import { changesBetween, recordAuditEvent, recordUpdate } from '../audit/audit.service.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { generateApiKey, hasValidChecksum, hashApiKey, keySnippet } from './api-key-format.ts';
import * as repo from './api-keys.repository.ts';
import type { KeyAuthCache } from './key-auth-cache.ts';
import {
  isAdminOnly,
  isScope,
  roleAllows,
  SCOPE_DESCRIPTIONS,
  SCOPES,
  type Role,
  type Scope,
} from '../../platform/http/scopes.ts';

export interface ApiKeyView {
  uid: string;
  name: string;
  key_snippet: string;
  user_uid: string;
  organization_uid: string;
  scopes: string[];
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
  updated_at: Date;
  key?: string;
}

export function toApiKeyView(row: repo.ApiKeyRow, plaintext?: string): ApiKeyView {
  return {
    uid: row.uid,
    name: row.name,
    key_snippet: keySnippet(row.keyLast4),
    user_uid: row.userUid,
    organization_uid: row.organizationUid,
    scopes: row.scopes ?? [],
    last_used_at: row.lastUsedAt,
    expires_at: row.expiresAt,
    revoked_at: row.revokedAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    ...(plaintext ? { key: plaintext } : {}),
  };
}

export interface IssueKeyInput {
  organizationUid: string;
  userUid: string;
  name: string;
  /** null or empty: full access. */
  scopes: Scope[] | null;
  expiresInDays?: number | undefined;
  createdByKeyUid?: string | undefined;
}

/** Creates a key and returns its one and only plaintext; used by the HTTP door and the CLI alike. */
export async function issueApiKey(db: DbOrTx, pepper: string | undefined, input: IssueKeyInput) {
  const key = generateApiKey();
  const expiresAt =
    input.expiresInDays !== undefined ? new Date(Date.now() + input.expiresInDays * 86_400_000) : null;
  const row = await repo.insertApiKey(db, {
    organizationUid: input.organizationUid,
    userUid: input.userUid,
    name: input.name,
    keyHash: hashApiKey(key, pepper),
    keyLast4: key.slice(-4),
    scopes: input.scopes && input.scopes.length > 0 ? [...new Set(input.scopes)] : null,
    expiresAt,
    createdByKeyUid: input.createdByKeyUid,
  });
  return { row, key };
}

export interface CreateApiKeyBody {
  name: string;
  scopes?: string[] | undefined;
  expires_in_days?: number | undefined;
  user_uid?: string | undefined;
}

/** Every scope a key may carry, with what it allows and whether only admins hold it (for pickers). */
export function listScopes() {
  return SCOPES.map((scope) => ({
    scope,
    description: SCOPE_DESCRIPTIONS[scope],
    admin_only: isAdminOnly(scope),
  }));
}

/** The requested scopes without repeats; any unknown one is 422 `validation_failed`, naming it. */
function knownScopes(requested: string[] | undefined): Scope[] {
  const unknown = (requested ?? []).filter((s) => !isScope(s));
  if (unknown.length > 0) {
    throw new AppError(
      'validation_failed',
      `Unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`,
      unknown.map((s) => ({
        field: 'scopes',
        message: `"${s}" is not a scope; known scopes: ${SCOPES.join(', ')}`,
      })),
    );
  }
  return [...new Set(requested ?? [])] as Scope[];
}

/**
 * Validates what the caller may grant: only known scopes (422), only a subset of the calling key's own
 * scopes when that key is scoped (a scoped key never mints a full-access key), and nothing above the
 * caller's role (403).
 */
export function grantableScopes(ctx: RequestContext, requested: string[] | undefined): Scope[] | null {
  const scopes = knownScopes(requested);
  const callerScopes = ctx.principal.scopes;
  if (callerScopes !== null) {
    if (scopes.length === 0) {
      throw new AppError(
        'forbidden',
        'A key with scopes cannot create a full-access key; list the scopes to grant',
      );
    }
    const beyond = scopes.filter((s) => !callerScopes.includes(s));
    if (beyond.length > 0) {
      throw new AppError('forbidden', `Your key cannot grant scopes it does not hold: ${beyond.join(', ')}`);
    }
  }
  const aboveRole = scopes.filter((s) => !roleAllows(ctx.role, s));
  if (aboveRole.length > 0) {
    throw new AppError('forbidden', `Your role (${ctx.role}) cannot grant: ${aboveRole.join(', ')}`);
  }
  return scopes.length > 0 ? scopes : null;
}

export async function createApiKey(
  db: Db,
  pepper: string | undefined,
  ctx: RequestContext,
  body: CreateApiKeyBody,
) {
  const scopes = grantableScopes(ctx, body.scopes);
  const owner = body.user_uid ?? ctx.principal.user.uid;
  if (owner !== ctx.principal.user.uid) {
    // An admin issues a key to a teammate (docs/people.md#keys): a member of this organization, and
    // nothing their own role could not use.
    if (ctx.role !== 'admin') throw new AppError('forbidden', 'Only admins issue keys to other members');
    const role = await repo.findMemberRole(db, ctx.organizationUid, owner);
    if (!role)
      throw new AppError('validation_failed', 'user_uid is not a member of this organization', [
        { field: 'user_uid', message: 'not a member of this organization' },
      ]);
    const aboveRole = (scopes ?? []).filter((s) => !roleAllows(role, s));
    if (aboveRole.length > 0) {
      throw new AppError('forbidden', `That member's role (${role}) cannot use: ${aboveRole.join(', ')}`);
    }
  }
  return db.transaction(async (tx) => {
    const { row, key } = await issueApiKey(tx, pepper, {
      organizationUid: ctx.organizationUid,
      userUid: owner,
      name: body.name,
      scopes,
      expiresInDays: body.expires_in_days,
      createdByKeyUid: ctx.principal.credential.kind === 'api_key' ? ctx.principal.credential.uid : undefined,
    });
    // The view without its plaintext: the audit log holds the snippet, never the key or its hash.
    await recordAuditEvent(tx, ctx, {
      organizationUid: row.organizationUid,
      action: 'api_key.created',
      entityUid: row.uid,
      changes: changesBetween(null, toApiKeyView(row), { omit: ['last_used_at'] }),
    });
    return toApiKeyView(row, key);
  });
}

export interface IssueMemberKeyInput {
  organizationUid: string;
  userUid: string;
  /** The member's role in the organization: the key's scopes stay within it. */
  role: Role;
  name: string;
  /** Undefined or empty: full access. */
  scopes?: string[] | undefined;
  expiresInDays?: number | undefined;
}

/**
 * A key the operator issues to a member (`remit keys create`): no calling key to stay within, only
 * known scopes and nothing above the member's role (a scope the role lacks would never work anyway).
 */
export async function issueMemberKey(db: DbOrTx, pepper: string | undefined, input: IssueMemberKeyInput) {
  const scopes = knownScopes(input.scopes);
  const aboveRole = scopes.filter((s) => !roleAllows(input.role, s));
  if (aboveRole.length > 0) {
    throw new AppError('validation_failed', `A ${input.role}'s key cannot hold: ${aboveRole.join(', ')}`);
  }
  const { row, key } = await issueApiKey(db, pepper, {
    organizationUid: input.organizationUid,
    userUid: input.userUid,
    name: input.name,
    scopes: scopes.length > 0 ? scopes : null,
    expiresInDays: input.expiresInDays,
  });
  return toApiKeyView(row, key);
}

/** A member's keys in one organization, newest first (`remit keys list`; a user has a handful). */
export async function listMemberKeys(db: DbOrTx, organizationUid: string, userUid: string) {
  const { rows } = await repo.listApiKeys(db, organizationUid, { userUid, limit: 1000, offset: 0 });
  return rows.map((r) => toApiKeyView(r));
}

/**
 * Revokes a key whatever its organization (`remit keys revoke`): the operator who holds the database
 * is not confined to a tenant. Revoking again keeps the first time.
 */
export async function revokeApiKeyAsOperator(db: Db, uid: string) {
  return db.transaction(async (tx) => {
    const existing = await repo.findApiKeyByUid(tx, uid);
    if (!existing) throw notFound('API key');
    const row = await repo.revokeApiKey(tx, existing.organizationUid, uid);
    return toApiKeyView(row!);
  });
}

/** Admins see every key of the organization; members only their own. */
function ownerFilter(ctx: RequestContext): string | undefined {
  return ctx.role === 'admin' ? undefined : ctx.principal.user.uid;
}

export async function listApiKeys(db: Db, ctx: RequestContext, page: PageRequest) {
  const { rows, total } = await repo.listApiKeys(db, ctx.organizationUid, {
    userUid: ownerFilter(ctx),
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map((r) => toApiKeyView(r)), total };
}

/**
 * Revokes a key of any organization the caller belongs to (a uid needs no organization parameter);
 * members may revoke only their own keys. Anything else is 404, so other tenants' keys stay invisible.
 */
export async function revokeApiKey(db: Db, principal: Principal, origin: CallOrigin, uid: string) {
  return db.transaction(async (tx) => {
    const organizationUids = principal.memberships.map((m) => m.organizationUid);
    const existing = await repo.findApiKeyInOrganizations(tx, organizationUids, uid);
    if (!existing) throw notFound('API key');
    const ctx = contextFor(principal, origin, existing.organizationUid);
    if (ctx.role !== 'admin' && existing.userUid !== principal.user.uid) throw notFound('API key');
    const row = await repo.revokeApiKey(tx, ctx.organizationUid, uid);
    // Revoking again changes nothing (the first revoked_at stays), and records nothing.
    await recordUpdate(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'api_key.revoked',
      entityUid: uid,
      before: { revokedAt: existing.revokedAt },
      after: { revokedAt: row!.revokedAt },
    });
    return toApiKeyView(row!);
  });
}

/**
 * A member removed from an organization (docs/people.md#members-and-invitations): their keys made there
 * are revoked in the same transaction, so they get 401 from the next request. Returns how many.
 */
export async function revokeUserKeysInOrganization(
  tx: DbOrTx,
  organizationUid: string,
  userUid: string,
): Promise<number> {
  return repo.revokeKeysOfUser(tx, organizationUid, userUid);
}

export type AuthenticationResult =
  | { ok: true; principal: Principal }
  | { ok: false; reason: 'malformed' | 'unknown' | 'expired' | 'revoked' | 'not_a_member' };

/**
 * Memberships already read, per key hash, with the user's `auth_version` they belong to. Bounded; an
 * entry is only ever used when the database says the version is still current.
 */
export class MembershipCache {
  private readonly entries = new Map<string, { version: number; memberships: Membership[] }>();
  constructor(private readonly maxEntries = 50_000) {}

  get(keyHash: string) {
    return this.entries.get(keyHash);
  }

  set(keyHash: string, version: number, memberships: Membership[]) {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(keyHash, { version, memberships });
  }
}

/** What authentication reads of a user's memberships: null when the cached version is still current. */
export interface MembershipRows {
  auth_version: number;
  memberships:
    | {
        organization_uid: string;
        organization_name: string;
        role: string;
        is_default: boolean;
        require_admin_mfa?: boolean;
      }[]
    | null;
}

/**
 * The memberships of an authentication row: the cached ones when the database says they are still
 * current (it sent none), else the ones it sent, cached under `hash` (a key's or a session's).
 */
export function cachedMemberships(cache: MembershipCache, hash: string, row: MembershipRows): Membership[] {
  const cached = cache.get(hash);
  if (row.memberships === null && cached && cached.version === row.auth_version) return cached.memberships;
  const memberships = (row.memberships ?? []).map((m) => ({
    organizationUid: m.organization_uid,
    organizationName: m.organization_name,
    role: m.role as Role,
    isDefault: m.is_default,
    ...(m.require_admin_mfa !== undefined ? { requireAdminMfa: m.require_admin_mfa } : {}),
  }));
  cache.set(hash, row.auth_version, memberships);
  return memberships;
}

/** The user of an authentication row (a key's or a session's), as the principal carries it. */
export function principalUser(row: {
  user_uid: string;
  user_id: number;
  email: string;
  full_name: string;
  avatar_url: string | null;
}): Principal['user'] {
  return {
    uid: row.user_uid,
    id: row.user_id,
    email: row.email,
    fullName: row.full_name,
    avatarUrl: row.avatar_url,
  };
}

/** Turns a presented key into a principal. A key whose checksum is wrong never reaches the database. */
export async function authenticate(
  database: Database,
  pepper: string | undefined,
  key: string,
  cache: MembershipCache = new MembershipCache(),
  principals?: KeyAuthCache,
): Promise<AuthenticationResult> {
  if (!hasValidChecksum(key)) return { ok: false, reason: 'malformed' };
  const hash = hashApiKey(key, pepper);
  const held = principals?.get(hash);
  if (held) return { ok: true, principal: held };
  const readAt = principals?.mark() ?? 0;
  const cached = cache.get(hash);
  const row = await repo.findKeyForAuthentication(database, hash, cached?.version ?? -1);
  if (!row || !crypto.timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash))) {
    return { ok: false, reason: 'unknown' };
  }
  if (row.is_revoked) return { ok: false, reason: 'revoked' };
  if (row.is_expired) return { ok: false, reason: 'expired' };
  const memberships = cachedMemberships(cache, hash, row);
  // A key is its user's membership of the organization it was made in. Removing the member revokes
  // their keys there; should one ever be missed, the key still dies with the membership.
  if (!memberships.some((m) => m.organizationUid === row.key_organization_uid)) {
    return { ok: false, reason: 'not_a_member' };
  }
  const principal: Principal = {
    credential: { kind: 'api_key', uid: row.key_uid, organizationUid: row.key_organization_uid },
    scopes: row.scopes,
    user: principalUser(row),
    memberships,
  };
  principals?.set(hash, readAt, principal, row.expires_at);
  return { ok: true, principal };
}
