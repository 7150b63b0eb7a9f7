import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { requireAdmin, type RequestContext } from '../../platform/http/context.ts';
import { notFound, validationFailed } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { changesBetween, recordAuditEvent, recordUpdate } from '../audit/audit.service.ts';
import * as repo from './approval-policies.repository.ts';
import type { CreatePolicyBodyT, UpdatePolicyBodyT } from './approval-policies.schemas.ts';
import { choosePolicy, type ApprovalFacts, type PolicySnapshot } from './approval-rules.ts';
import { agentExists } from './work-tasks.repository.ts';

type PolicyRow = repo.PolicyRow;

export function toPolicyView(row: PolicyRow) {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    name: row.name,
    agent_uid: row.agentUid,
    tool_type: row.toolType,
    min_amount_cents: row.minAmountCents,
    approver_roles: row.approverRoles,
    approver_user_uids: row.approverUserUids,
    required_approvals: row.requiredApprovals,
    forbid_initiator: row.forbidInitiator,
    require_rejection_reason: row.requireRejectionReason,
    expires_after_minutes: row.expiresAfterMinutes,
    escalate_after_minutes: row.escalateAfterMinutes,
    escalate_to_user_uids: row.escalateToUserUids,
    escalate_to_chat_channel_id: row.escalateToChatChannelId,
    created_by_uid: row.createdByUid,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
export type PolicyView = ReturnType<typeof toPolicyView>;

/** The rules a task keeps of the policy it was raised under (what `work_tasks.policy` holds). */
export function snapshotOf(row: PolicyRow): PolicySnapshot {
  return {
    uid: row.uid,
    name: row.name,
    agent_uid: row.agentUid,
    tool_type: row.toolType,
    min_amount_cents: row.minAmountCents,
    approver_roles: [...row.approverRoles],
    approver_user_uids: [...row.approverUserUids],
    required_approvals: row.requiredApprovals,
    forbid_initiator: row.forbidInitiator,
    require_rejection_reason: row.requireRejectionReason,
    expires_after_minutes: row.expiresAfterMinutes,
    escalate_after_minutes: row.escalateAfterMinutes,
    escalate_to_user_uids: [...row.escalateToUserUids],
    escalate_to_chat_channel_id: row.escalateToChatChannelId,
  };
}

/** The policy that governs an approval of this organization, or null (today's rules). */
export async function policyFor(
  db: DbOrTx,
  organizationUid: string,
  facts: ApprovalFacts,
): Promise<PolicyRow | null> {
  const candidates = await repo.policiesForAgent(db, organizationUid, facts.agentUid);
  return choosePolicy(candidates, facts) ?? null;
}

/** A policy's settings after a create or an update, checked as a whole. */
type PolicyState = Omit<
  repo.NewPolicy,
  'uid' | 'organizationUid' | 'createdAt' | 'updatedAt' | 'createdByUid'
>;

/**
 * The rules no schema can check: the agent and people named are the organization's, someone can
 * approve, enough people are named to reach the count, and escalation comes before expiry and tells
 * someone. The database repeats the simple ones as constraints.
 */
async function checkPolicy(db: DbOrTx, organizationUid: string, state: PolicyState): Promise<PolicyState> {
  const name = state.name.trim();
  if (name.length === 0) throw validationFailed('name', 'name must have 1 to 128 characters');
  if (state.agentUid && !(await agentExists(db, organizationUid, state.agentUid)))
    throw validationFailed('agent_uid', 'No agent of this organization has that uid');
  const roles = state.approverRoles ?? [];
  const approvers = state.approverUserUids ?? [];
  const escalateTo = state.escalateToUserUids ?? [];
  const members = await repo.membersAmong(db, organizationUid, [...new Set([...approvers, ...escalateTo])]);
  for (const [field, uids] of [
    ['approver_user_uids', approvers],
    ['escalate_to_user_uids', escalateTo],
  ] as const) {
    const index = uids.findIndex((uid) => !members.has(uid));
    if (index >= 0)
      throw validationFailed(
        `${field}[${index}]`,
        `No member of this organization has the uid ${uids[index]}`,
      );
  }
  if (roles.length === 0 && approvers.length === 0)
    throw validationFailed(
      'approver_roles',
      'A policy needs at least one approver: a role (approver_roles) or a person (approver_user_uids)',
    );
  const required = state.requiredApprovals ?? 1;
  if (roles.length === 0 && required > approvers.length)
    throw validationFailed(
      'required_approvals',
      `required_approvals (${required}) is more than the ${approvers.length} approver(s) named; name more or add a role`,
    );
  const expires = state.expiresAfterMinutes ?? null;
  const escalate = state.escalateAfterMinutes ?? null;
  const channel = state.escalateToChatChannelId ?? null;
  if (escalate !== null && expires !== null && escalate >= expires)
    throw validationFailed(
      'escalate_after_minutes',
      `escalate_after_minutes (${escalate}) must be less than expires_after_minutes (${expires})`,
    );
  if (escalate !== null && escalateTo.length === 0 && channel === null)
    throw validationFailed(
      'escalate_after_minutes',
      'An escalation needs someone to tell: escalate_to_user_uids or escalate_to_chat_channel_id',
    );
  if (escalate === null && (escalateTo.length > 0 || channel !== null))
    throw validationFailed(
      escalateTo.length > 0 ? 'escalate_to_user_uids' : 'escalate_to_chat_channel_id',
      'Escalation targets need escalate_after_minutes (when to tell them)',
    );
  return { ...state, name };
}

/** Bookkeeping an audit event leaves out: the entity is the policy, and who made it is the actor. */
const POLICY_NOISE = ['created_by_uid'];

export async function createPolicy(
  db: Db,
  ctx: RequestContext,
  body: CreatePolicyBodyT,
): Promise<PolicyView> {
  requireAdmin(ctx);
  const org = ctx.organizationUid;
  return db.transaction(async (tx) => {
    const state = await checkPolicy(tx, org, {
      name: body.name,
      agentUid: body.agent_uid ?? null,
      toolType: body.tool_type ?? null,
      minAmountCents: body.min_amount_cents ?? null,
      approverRoles: body.approver_roles ?? [],
      approverUserUids: body.approver_user_uids ?? [],
      requiredApprovals: body.required_approvals ?? 1,
      forbidInitiator: body.forbid_initiator ?? false,
      requireRejectionReason: body.require_rejection_reason ?? false,
      expiresAfterMinutes: body.expires_after_minutes ?? null,
      escalateAfterMinutes: body.escalate_after_minutes ?? null,
      escalateToUserUids: body.escalate_to_user_uids ?? [],
      escalateToChatChannelId: body.escalate_to_chat_channel_id ?? null,
    });
    const row = await repo.insertPolicy(tx, {
      ...state,
      organizationUid: org,
      createdByUid: ctx.principal.user.uid,
    });
    await recordAuditEvent(tx, ctx, {
      organizationUid: org,
      action: 'approval_policy.created',
      entityUid: row.uid,
      changes: changesBetween(null, row, { omit: POLICY_NOISE }),
    });
    return toPolicyView(row);
  });
}

export async function getPolicy(db: Db, ctx: RequestContext, uid: string): Promise<PolicyView> {
  const row = await repo.findPolicy(db, ctx.organizationUid, uid);
  if (!row) throw notFound('Approval policy');
  return toPolicyView(row);
}

export async function listPolicies(db: Db, ctx: RequestContext, page: PageRequest) {
  const { rows, total } = await repo.listPolicies(db, ctx.organizationUid, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(toPolicyView), total };
}

/** Partial: only the fields sent change; the result is checked as a whole. Pending tasks keep their copy. */
/** What changing a policy needs before its body is read: an admin, and the policy (else 404). */
export async function policyExists(db: Db, ctx: RequestContext, uid: string): Promise<void> {
  requireAdmin(ctx);
  if (!(await repo.findPolicy(db, ctx.organizationUid, uid))) throw notFound('Approval policy');
}

export async function updatePolicy(
  db: Db,
  ctx: RequestContext,
  uid: string,
  body: UpdatePolicyBodyT,
): Promise<PolicyView> {
  requireAdmin(ctx);
  const org = ctx.organizationUid;
  return db.transaction(async (tx) => {
    const before = await repo.findPolicy(tx, org, uid, { forUpdate: true });
    if (!before) throw notFound('Approval policy');
    const state = await checkPolicy(tx, org, {
      name: body.name ?? before.name,
      agentUid: body.agent_uid !== undefined ? body.agent_uid : before.agentUid,
      toolType: body.tool_type !== undefined ? body.tool_type : before.toolType,
      minAmountCents: body.min_amount_cents !== undefined ? body.min_amount_cents : before.minAmountCents,
      approverRoles: body.approver_roles ?? before.approverRoles,
      approverUserUids: body.approver_user_uids ?? before.approverUserUids,
      requiredApprovals: body.required_approvals ?? before.requiredApprovals,
      forbidInitiator: body.forbid_initiator ?? before.forbidInitiator,
      requireRejectionReason: body.require_rejection_reason ?? before.requireRejectionReason,
      expiresAfterMinutes:
        body.expires_after_minutes !== undefined ? body.expires_after_minutes : before.expiresAfterMinutes,
      escalateAfterMinutes:
        body.escalate_after_minutes !== undefined ? body.escalate_after_minutes : before.escalateAfterMinutes,
      escalateToUserUids: body.escalate_to_user_uids ?? before.escalateToUserUids,
      escalateToChatChannelId:
        body.escalate_to_chat_channel_id !== undefined
          ? body.escalate_to_chat_channel_id
          : before.escalateToChatChannelId,
    });
    const changes = changesBetween(before, { ...before, ...state }, { omit: POLICY_NOISE });
    if (Object.keys(changes).length === 0) return toPolicyView(before);
    const after = await repo.updatePolicy(tx, org, uid, state);
    if (!after) throw notFound('Approval policy');
    await recordUpdate(tx, ctx, {
      organizationUid: org,
      action: 'approval_policy.updated',
      entityUid: uid,
      before,
      after,
      options: { omit: POLICY_NOISE },
    });
    return toPolicyView(after);
  });
}

/** Removes it for approvals raised from now on; pending tasks keep the rules they were raised under. */
export async function deletePolicy(db: Db, ctx: RequestContext, uid: string): Promise<PolicyView> {
  requireAdmin(ctx);
  const org = ctx.organizationUid;
  return db.transaction(async (tx) => {
    const row = await repo.deletePolicy(tx, org, uid);
    if (!row) throw notFound('Approval policy');
    await recordAuditEvent(tx, ctx, {
      organizationUid: org,
      action: 'approval_policy.deleted',
      entityUid: uid,
      changes: changesBetween(row, null, { omit: POLICY_NOISE }),
    });
    return toPolicyView(row);
  });
}
