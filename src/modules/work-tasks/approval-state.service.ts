import crypto from 'node:crypto';
import type { DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import * as repo from './work-tasks.repository.ts';

/**
 * What a message about an approval shows (Slack's, updated in place as it changes): whether it is
 * still open, who decided and when, the votes so far under a two-person rule.
 */
export interface ApprovalState {
  uid: string;
  organizationUid: string;
  title: string;
  status: string;
  resolution: 'approved' | 'rejected' | 'expired' | null;
  decidedBy: { uid: string; name: string } | null;
  decidedAt: Date | null;
  note: string | null;
  approvals: number;
  requiredApprovals: number;
  expiresAt: Date | null;
  policyName: string | null;
  /** What the agent will do once approved. */
  toolArgs: Record<string, unknown> | null;
  /**
   * A digest of `toolArgs`: a button carries the one it was drawn with, so a click approves only the
   * arguments its message showed (not a revision posted since).
   */
  argsDigest: string;
  /** The version of `toolArgs` (moves when they change): a decision made from the message sends it. */
  argsRevision: number;
}

export function argsDigestOf(toolArgs: unknown): string {
  return crypto
    .createHash('sha256')
    .update(stableJson(toolArgs ?? null))
    .digest('hex')
    .slice(0, 16);
}

/** JSON with object keys sorted: the same arguments give the same digest whatever their order. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

export async function approvalState(
  db: DbOrTx,
  organizationUid: string,
  taskUid: string,
  options: { forUpdate?: boolean } = {},
): Promise<ApprovalState | null> {
  const task = await repo.findTask(db, [organizationUid], taskUid, options);
  if (!task || task.type !== 'hil_approval') return null;
  const [decider] = task.resolvedByUserUid ? await repo.loadUsers(db, [task.resolvedByUserUid]) : [];
  return {
    uid: task.uid,
    organizationUid,
    title: task.title,
    status: task.status,
    resolution: task.resolution,
    decidedBy: decider ? { uid: decider.uid, name: decider.fullName || decider.email } : null,
    decidedAt: task.resolvedAt,
    note: task.resolutionNote,
    approvals: task.policy ? await repo.countApprovals(db, organizationUid, task.uid) : 0,
    requiredApprovals: task.policy?.required_approvals ?? 1,
    expiresAt: task.expiresAt,
    policyName: task.policy?.name ?? null,
    toolArgs: task.toolArgs,
    argsDigest: argsDigestOf(task.toolArgs),
    argsRevision: task.argsRevision,
  };
}

/** What changed about an approval: decided (or expired), or one more vote under a two-person rule. */
export type ApprovalChange = 'decided' | 'vote';

/**
 * Called inside the transaction that changed an approval, so what a listener enqueues (a job to update
 * the chat messages about it) commits with the change or not at all. Other modules register theirs at
 * install; the work-tasks module knows none of them.
 */
export type ApprovalListener = (
  tx: DbOrTx,
  jobs: Jobs,
  change: { organizationUid: string; taskUid: string; kind: ApprovalChange },
) => Promise<void>;

const listeners: ApprovalListener[] = [];

export function onApprovalChanged(listener: ApprovalListener): void {
  if (!listeners.includes(listener)) listeners.push(listener);
}

export async function approvalChanged(
  tx: DbOrTx,
  jobs: Jobs,
  change: { organizationUid: string; taskUid: string; kind: ApprovalChange },
): Promise<void> {
  for (const listener of listeners) await listener(tx, jobs, change);
}
