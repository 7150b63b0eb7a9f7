import crypto from 'node:crypto';
import type { Database, Db, DbOrTx } from '../../platform/db/client.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import {
  contextFor,
  type Membership,
  type Principal,
  type RequestContext,
} from '../../platform/http/context.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { generateApiKey, hasValidChecksum, hashApiKey, keySnippet } from './api-key-format.ts';
import * as repo from './api-keys.repository.ts';
import { isScope, roleAllows, SCOPES, type Role, type Scope } from '../../platform/http/scopes.ts';

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
}

/**
 * Validates what the caller may grant: only known scopes (422), only a subset of the calling key's own
 * scopes when that key is scoped (a scoped key never mints a full-access key), and nothing above the
 * caller's role (403).
 */
export function grantableScopes(ctx: RequestContext, requested: string[] | undefined): Scope[] | null {
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
  const scopes = [...new Set(requested ?? [])] as Scope[];
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
  const { row, key } = await issueApiKey(db, pepper, {
    organizationUid: ctx.organizationUid,
    userUid: ctx.principal.user.uid,
    name: body.name,
    scopes,
    expiresInDays: body.expires_in_days,
    createdByKeyUid: ctx.principal.apiKeyUid,
  });
  return toApiKeyView(row, key);
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
export async function revokeApiKey(db: Db, principal: Principal, requestId: string, uid: string) {
  return db.transaction(async (tx) => {
    const organizationUids = principal.memberships.map((m) => m.organizationUid);
    const existing = await repo.findApiKeyInOrganizations(tx, organizationUids, uid);
    if (!existing) throw notFound('API key');
    const ctx = contextFor(principal, requestId, existing.organizationUid);
    if (ctx.role !== 'admin' && existing.userUid !== principal.user.uid) throw notFound('API key');
    const row = await repo.revokeApiKey(tx, ctx.organizationUid, uid);
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

/** Turns a presented key into a principal. A key whose checksum is wrong never reaches the database. */
export async function authenticate(
  database: Database,
  pepper: string | undefined,
  key: string,
  cache: MembershipCache = new MembershipCache(),
): Promise<AuthenticationResult> {
  if (!hasValidChecksum(key)) return { ok: false, reason: 'malformed' };
  const hash = hashApiKey(key, pepper);
  const cached = cache.get(hash);
  const row = await repo.findKeyForAuthentication(database, hash, cached?.version ?? -1);
  if (!row || !crypto.timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash))) {
    return { ok: false, reason: 'unknown' };
  }
  if (row.is_revoked) return { ok: false, reason: 'revoked' };
  if (row.is_expired) return { ok: false, reason: 'expired' };
  let memberships: Membership[];
  if (row.memberships === null && cached && cached.version === row.auth_version) {
    memberships = cached.memberships;
  } else {
    memberships = (row.memberships ?? []).map((m) => ({
      organizationUid: m.organization_uid,
      organizationName: m.organization_name,
      role: m.role as Role,
      isDefault: m.is_default,
    }));
    cache.set(hash, row.auth_version, memberships);
  }
  // A key is its user's membership of the organization it was made in. Removing the member revokes
  // their keys there; should one ever be missed, the key still dies with the membership.
  if (!memberships.some((m) => m.organizationUid === row.key_organization_uid)) {
    return { ok: false, reason: 'not_a_member' };
  }
  return {
    ok: true,
    principal: {
      apiKeyUid: row.key_uid,
      apiKeyOrganizationUid: row.key_organization_uid,
      scopes: row.scopes,
      user: {
        uid: row.user_uid,
        id: row.user_id,
        email: row.email,
        fullName: row.full_name,
        avatarUrl: row.avatar_url,
      },
      memberships,
    },
  };
}
