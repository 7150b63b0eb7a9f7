/**
 * The rules of approval policies as pure functions (docs/approvals.md): which policy governs an
 * approval, and whether a person may decide it. The service reads and writes; this decides.
 */

export type ApproverRole = 'admin' | 'member';

/**
 * A policy's rules as copied onto a task when the approval is raised (`work_tasks.policy`): editing or
 * deleting the policy later changes nothing for that task. Escalation adds its people to
 * `approver_user_uids` (they may decide from then on).
 */
export interface PolicySnapshot {
  uid: string;
  name: string;
  agent_uid: string | null;
  tool_type: string | null;
  min_amount_cents: number | null;
  approver_roles: ApproverRole[];
  approver_user_uids: string[];
  required_approvals: number;
  forbid_initiator: boolean;
  /** A rejection needs a `resolution_note` (absent on snapshots taken before migration 0037: false). */
  require_rejection_reason?: boolean;
  expires_after_minutes: number | null;
  escalate_after_minutes: number | null;
  escalate_to_user_uids: string[];
  escalate_to_chat_channel_id: string | null;
}

/** What a policy is matched on. */
export interface PolicyScope {
  uid: string;
  agentUid: string | null;
  toolType: string | null;
  minAmountCents: number | null;
  createdAt: Date;
}

/** What an approval offers to match: the agent that raised it and the action it asks for. */
export interface ApprovalFacts {
  agentUid: string;
  toolArgs: Record<string, unknown> | null;
}

/** `tool_args.type` when it is a string. */
export function toolTypeOf(toolArgs: Record<string, unknown> | null): string | null {
  const type = toolArgs?.type;
  return typeof type === 'string' ? type : null;
}

/** `tool_args.amount_cents` when it is a finite number (a numeric string is not: no guessing). */
export function amountOf(toolArgs: Record<string, unknown> | null): number | null {
  const amount = toolArgs?.amount_cents;
  return typeof amount === 'number' && Number.isFinite(amount) ? amount : null;
}

export function policyMatches(policy: PolicyScope, approval: ApprovalFacts): boolean {
  if (policy.agentUid !== null && policy.agentUid !== approval.agentUid) return false;
  if (policy.toolType !== null && policy.toolType !== toolTypeOf(approval.toolArgs)) return false;
  if (policy.minAmountCents !== null) {
    // An approval without a numeric amount does not reach any minimum.
    const amount = amountOf(approval.toolArgs);
    if (amount === null || amount < policy.minAmountCents) return false;
  }
  return true;
}

/** agent and tool 3, agent 2, tool 1, organization-wide 0. */
export function specificityOf(policy: Pick<PolicyScope, 'agentUid' | 'toolType'>): number {
  return (policy.agentUid !== null ? 2 : 0) + (policy.toolType !== null ? 1 : 0);
}

/**
 * The one policy that governs an approval, of the organization's: among those that match, the most
 * specific (agent and tool, then agent, then tool, then organization-wide), then the highest
 * `min_amount_cents` (a policy without one counts as the lowest), then the newest (then the highest
 * uid, so the choice never depends on the order given). None: today's rules.
 */
export function choosePolicy<T extends PolicyScope>(
  policies: readonly T[],
  approval: ApprovalFacts,
): T | undefined {
  let best: T | undefined;
  for (const policy of policies) {
    if (!policyMatches(policy, approval)) continue;
    if (!best || outranks(policy, best)) best = policy;
  }
  return best;
}

function outranks(a: PolicyScope, b: PolicyScope): boolean {
  const bySpecificity = specificityOf(a) - specificityOf(b);
  if (bySpecificity !== 0) return bySpecificity > 0;
  const byAmount = (a.minAmountCents ?? -Infinity) - (b.minAmountCents ?? -Infinity);
  if (byAmount !== 0 && !Number.isNaN(byAmount)) return byAmount > 0;
  const byAge = a.createdAt.getTime() - b.createdAt.getTime();
  if (byAge !== 0) return byAge > 0;
  return a.uid > b.uid;
}

export type Refusal = 'not_an_approver' | 'initiator_cannot_approve';

/**
 * Why this person may not take this decision, or null when they may. No policy: anyone in the
 * organization decides. With one: a person in one of its roles or named in it (escalation names more);
 * and when it forbids the initiator, the person who started it may not approve (they may still
 * reject, or respond with feedback: withdrawing or reshaping one's own request is never the risk the
 * rule guards against). Who may respond is who may decide.
 */
export function refusalOf(
  policy: PolicySnapshot | null,
  person: { userUid: string; role: ApproverRole | undefined },
  action: 'approve' | 'reject' | 'respond',
  initiatorUserUid: string | null,
): Refusal | null {
  if (!policy) return null;
  const byRole = person.role !== undefined && policy.approver_roles.includes(person.role);
  if (!byRole && !policy.approver_user_uids.includes(person.userUid)) return 'not_an_approver';
  if (action === 'approve' && policy.forbid_initiator && initiatorUserUid === person.userUid)
    return 'initiator_cannot_approve';
  return null;
}
