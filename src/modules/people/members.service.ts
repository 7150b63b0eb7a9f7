import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { recordAuditEvent } from '../audit/audit.service.ts';
import { requireAdmin, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import type { Role } from '../../platform/http/scopes.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { revokeUserKeysInOrganization } from '../api-keys/api-keys.service.ts';
import * as tenancy from '../tenancy/tenancy.service.ts';
import { unassignRemovedMember, userActor } from '../work-tasks/work-tasks.service.ts';
import * as repo from './members.repository.ts';

export interface MemberView {
  user_uid: string;
  user_id: number;
  email: string;
  full_name: string;
  avatar_url: string | null;
  role: Role;
  joined_at: Date;
  last_active_at: Date | null;
}

function latest(a: Date | null | undefined, b: Date | null | undefined): Date | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return a > b ? a : b;
}

/** Rows as the API shows them, with the last activity of their sessions (one query for the page). */
async function toMemberViews(db: DbOrTx, rows: repo.MemberRow[]): Promise<MemberView[]> {
  const seen = await repo.sessionsLastSeen(
    db,
    rows.map((r) => r.userUid),
  );
  return rows.map((r) => ({
    user_uid: r.userUid,
    user_id: r.userId,
    email: r.email,
    full_name: r.fullName,
    avatar_url: r.avatarUrl,
    role: r.role,
    joined_at: r.joinedAt,
    last_active_at: latest(r.keysLastUsedAt, seen.get(r.userUid)),
  }));
}

export async function listMembers(
  db: Db,
  ctx: RequestContext,
  query: { role?: Role | undefined },
  page: PageRequest,
) {
  requireAdmin(ctx);
  const { rows, total } = await repo.listMembers(db, ctx.organizationUid, {
    role: query.role,
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: await toMemberViews(db, rows), total };
}

const lastAdmin = () =>
  new AppError('invalid_state', 'This is the organization’s last admin: make another member an admin first');

/**
 * Refuses to leave the organization without an admin. Locks the admin memberships first, so of two
 * concurrent demotions (or removals) of the last two admins the second waits, re-reads, and is refused.
 */
async function keepAnAdmin(tx: DbOrTx, organizationUid: string, userUid: string): Promise<void> {
  const admins = await tenancy.lockAdminMemberships(tx, organizationUid);
  if (admins.includes(userUid) && admins.length <= 1) throw lastAdmin();
}

/** Admins only. The role changes at once: the member's next request acts with it (users.auth_version). */
/** What changing a member needs before its body is read: an admin, and the member (else 404). */
export async function memberExists(db: Db, ctx: RequestContext, userUid: string): Promise<void> {
  requireAdmin(ctx);
  if (!(await tenancy.findMembership(db, ctx.organizationUid, userUid))) throw notFound('Member');
}

export async function changeMemberRole(
  db: Db,
  ctx: RequestContext,
  userUid: string,
  role: Role,
): Promise<MemberView> {
  requireAdmin(ctx);
  const org = ctx.organizationUid;
  const row = await db.transaction(async (tx) => {
    const member = await tenancy.findMembership(tx, org, userUid);
    if (!member) throw notFound('Member');
    if (member.role === role) return member;
    if (role !== 'admin') await keepAnAdmin(tx, org, userUid);
    const changed = await tenancy.updateMembershipRole(tx, org, userUid, role);
    await recordAuditEvent(tx, ctx, {
      organizationUid: org,
      action: 'member.role_changed',
      entityUid: userUid,
      changes: { role: { before: member.role, after: role } },
    });
    return changed;
  });
  if (!row) throw notFound('Member');
  const member = await repo.findMember(db, org, userUid);
  if (!member) throw notFound('Member');
  return (await toMemberViews(db, [member]))[0]!;
}

export interface RemovedMemberView {
  user_uid: string;
  email: string;
  role: Role;
  revoked_api_keys: number;
  unassigned_work_tasks: number;
}

/**
 * Admins only; in one transaction: the membership goes, the member's keys of this organization are
 * revoked (401 from their next request), and their open work tasks here are unassigned with a
 * change-log entry. The last admin cannot be removed.
 */
export async function removeMember(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  userUid: string,
): Promise<RemovedMemberView> {
  requireAdmin(ctx);
  const org = ctx.organizationUid;
  return db.transaction(async (tx) => {
    const member = await repo.findMember(tx, org, userUid);
    if (!member) throw notFound('Member');
    await keepAnAdmin(tx, org, userUid);
    // Deleting the membership bumps users.auth_version (trigger, migration 0005): every instance
    // re-reads the user's memberships on their next request.
    const removed = await tenancy.deleteMembership(tx, org, userUid);
    if (!removed) throw notFound('Member');
    const revoked = await revokeUserKeysInOrganization(tx, org, userUid);
    const unassigned = await unassignRemovedMember(tx, jobs, org, userUid, userActor(ctx));
    await recordAuditEvent(tx, ctx, {
      organizationUid: org,
      action: 'member.removed',
      entityUid: userUid,
      changes: {
        email: { before: member.email, after: null },
        role: { before: member.role, after: null },
        revoked_api_keys: { before: null, after: revoked },
        unassigned_work_tasks: { before: null, after: unassigned },
      },
    });
    return {
      user_uid: userUid,
      email: member.email,
      role: member.role,
      revoked_api_keys: revoked,
      unassigned_work_tasks: unassigned,
    };
  });
}
