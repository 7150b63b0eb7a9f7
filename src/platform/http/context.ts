import type { Role, Scope } from './scopes.ts';
import { keyAllows, roleAllows } from './scopes.ts';
import { AppError } from './errors.ts';

export interface PrincipalUser {
  uid: string;
  id: number;
  email: string;
  fullName: string;
  avatarUrl: string | null;
}

export interface Membership {
  organizationUid: string;
  organizationName: string;
  role: Role;
  isDefault: boolean;
  /** The organization signs its admins in only with a second factor (sessions; docs/people.md). */
  requireAdminMfa?: boolean;
}

/**
 * What authenticated a call: an API key, a person's sign-in session (docs/people.md), an emailed
 * approval link (its `jti`; docs/approval-emails.md), a click in Slack (the Slack user's id; docs/slack.md),
 * or the service itself acting for a background job.
 */
export interface Credential {
  kind: 'api_key' | 'session' | 'approval_link' | 'slack' | 'system';
  uid: string;
  /**
   * The organization the credential's own records (idempotency) are kept under: a key's organization; a
   * session's, the user's default organization; null for a user who belongs to none.
   */
  organizationUid: string | null;
}

/** Who is calling: the credential, its user and every organization the user belongs to. */
export interface Principal {
  credential: Credential;
  /** null: full access within the role (a key without scopes, or a session). */
  scopes: string[] | null;
  user: PrincipalUser;
  memberships: Membership[];
  /** A session made with the user's second factor (TOTP). */
  secondFactor?: boolean;
  /** Whether the user has a second factor on, as a session's authentication read it (undefined: not read). */
  totpEnabled?: boolean;
}

export const ACTOR_TYPES = ['user', 'api_key', 'agent_run', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/**
 * Who makes a change, as the audit log records it (docs/audit-log.md#the-actor): a person, an API key
 * (with the person it belongs to), an agent run, or the service itself (a job).
 */
export interface AuditActor {
  type: ActorType;
  /** The user, key or agent run; null for the system. */
  uid: string | null;
  /** The person behind it when known: a key's user, the user who asked for an agent run. */
  userUid: string | null;
}

export const SYSTEM_ACTOR: AuditActor = Object.freeze({ type: 'system', uid: null, userUid: null });

/**
 * The actor of an authenticated principal: its API key, or — for a principal that authenticated
 * without one (a person's session) — the user.
 */
export function actorOf(principal: Principal): AuditActor {
  if (principal.credential.kind === 'api_key') {
    return { type: 'api_key', uid: principal.credential.uid, userUid: principal.user.uid };
  }
  return { type: 'user', uid: principal.user.uid, userUid: principal.user.uid };
}

/** Where a call comes from: the request's id and the client's address (after trusted proxies). */
export interface CallOrigin {
  requestId: string;
  clientAddress: string | null;
}

/**
 * What every service call receives: the organization the call acts in, the caller's role there, the
 * key's grant, and who and where the call comes from (what an audit event records). Services never see
 * Fastify objects.
 */
export interface RequestContext extends CallOrigin {
  organizationUid: string;
  role: Role;
  principal: Principal;
  actor: AuditActor;
}

export function can(ctx: RequestContext, scope: Scope): boolean {
  return keyAllows(ctx.principal.scopes, scope) && roleAllows(ctx.role, scope);
}

export function requirePermission(ctx: RequestContext, scope: Scope): void {
  if (!can(ctx, scope)) throw new AppError('missing_scope', `This call needs the ${scope} permission`);
}

export function requireAdmin(ctx: RequestContext): void {
  if (ctx.role !== 'admin') throw new AppError('forbidden', 'Only organization admins may do this');
}

/**
 * The organization of a call (CONTRACT §2, interface 4.4 rule 4): the explicit `organization_uid`,
 * which must be one of the caller's; else the user's default organization; else the first membership
 * by uid.
 */
export function resolveMembership(principal: Principal, explicitOrganizationUid?: string | null): Membership {
  if (explicitOrganizationUid) {
    const found = principal.memberships.find((m) => m.organizationUid === explicitOrganizationUid);
    if (!found) throw new AppError('not_a_member', 'You are not a member of that organization');
    return found;
  }
  const preferred =
    principal.memberships.find((m) => m.isDefault) ??
    [...principal.memberships].sort((a, b) => (a.organizationUid < b.organizationUid ? -1 : 1))[0];
  if (!preferred) throw new AppError('not_a_member', 'Your user belongs to no organization');
  return preferred;
}

export function contextFor(
  principal: Principal,
  origin: CallOrigin,
  explicitOrganizationUid?: string | null,
): RequestContext {
  const membership = resolveMembership(principal, explicitOrganizationUid);
  return {
    organizationUid: membership.organizationUid,
    role: membership.role,
    principal,
    requestId: origin.requestId,
    clientAddress: origin.clientAddress,
    actor: actorOf(principal),
  };
}

/** The same caller acting in another of its organizations (its role there), still the same actor. */
export function inOrganization(ctx: RequestContext, organizationUid: string): RequestContext {
  return { ...contextFor(ctx.principal, ctx, organizationUid), actor: ctx.actor };
}

/** The caller's role in an organization (not necessarily the call's), or undefined when not a member. */
export function roleIn(ctx: RequestContext, organizationUid: string): Role | undefined {
  return ctx.principal.memberships.find((m) => m.organizationUid === organizationUid)?.role;
}

/** Organizations the caller may read by uid (a lookup by uid needs no organization parameter). */
export function memberOrganizationUids(ctx: RequestContext): string[] {
  return ctx.principal.memberships.map((m) => m.organizationUid);
}
