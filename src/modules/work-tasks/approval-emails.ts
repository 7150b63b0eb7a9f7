import { refusalOf, type ApproverRole, type PolicySnapshot } from './approval-rules.ts';
import type { DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import {
  actorOf,
  type CallOrigin,
  type Principal,
  type RequestContext,
} from '../../platform/http/context.ts';
import type { AuditOrigin } from '../audit/audit.service.ts';
import * as repo from './approval-emails.repository.ts';

/**
 * The part of deciding by email that raising an approval needs (docs/approval-emails.md): who is to
 * be mailed, written with the approval, and the job that mails them after commit. The job itself and
 * the links' routes live in approval-emails.service.ts and approval-links.service.ts, which use the
 * task service; this file does not, so the task service can call it.
 */
export const APPROVAL_EMAIL_QUEUE = 'remit.approvals.email';

export interface ApprovalEmailJobData {
  organization_uid: string;
  task_uid: string;
}

/**
 * Who gets an approval's email: every member of its organization who turned approval emails on
 * (`PATCH /api/me/preferences`), except the person who raised it (the owner of the key an outside
 * runtime raised it with, or the person who started the agent's run). The one place to narrow when
 * approval policies say who may decide.
 */
export async function approvalEmailRecipients(
  db: DbOrTx,
  task: ApprovalEmailTask,
  raisedByUserUid: string | null,
): Promise<string[]> {
  const members = await repo.optedInMembers(db, task.organizationUid);
  return (
    members
      .filter((m) => m.userUid !== raisedByUserUid)
      // Under an approval policy only those it lets approve are asked (docs/approvals.md).
      .filter(
        (m) =>
          refusalOf(
            task.policy,
            { userUid: m.userUid, role: m.role as ApproverRole },
            'approve',
            task.initiatorUserUid,
          ) === null,
      )
      .map((m) => m.userUid)
  );
}

/** What choosing the recipients reads of the task. */
interface ApprovalEmailTask {
  organizationUid: string;
  uid: string;
  policy: PolicySnapshot | null;
  initiatorUserUid: string | null;
}

/**
 * In the raise's transaction: the recipients' rows and one job to mail them, so both exist exactly when
 * the approval does, and no mail goes out while the transaction is open. Nothing when nobody opted in.
 */
export async function queueApprovalEmails(
  tx: DbOrTx,
  jobs: Jobs,
  task: ApprovalEmailTask,
  origin: AuditOrigin,
): Promise<void> {
  const recipients = await approvalEmailRecipients(tx, task, origin.actor.userUid);
  if (recipients.length === 0) return;
  await repo.insertRecipients(tx, task.organizationUid, task.uid, recipients);
  await jobs.enqueue<ApprovalEmailJobData>(
    tx,
    APPROVAL_EMAIL_QUEUE,
    { organization_uid: task.organizationUid, task_uid: task.uid },
    { retryLimit: 5, retryDelaySeconds: 60 },
  );
}

/**
 * The context a link's holder acts in: that person, in that one organization, with the role they have
 * there now — so a removed member's link decides nothing, and every rule the API applies to a person
 * applies to them. Undefined when they are no longer a member.
 */
export async function approverContext(
  db: DbOrTx,
  link: { organizationUid: string; userUid: string; jti: string },
  origin: CallOrigin,
  credentialKind: 'approval_link' | 'slack' = 'approval_link',
): Promise<{ ctx: RequestContext; approver: repo.ApproverRow } | undefined> {
  const approver = await repo.findApprover(db, link.organizationUid, link.userUid);
  if (!approver) return undefined;
  const principal: Principal = {
    credential: { kind: credentialKind, uid: link.jti, organizationUid: link.organizationUid },
    scopes: null,
    user: {
      uid: approver.userUid,
      id: approver.userId,
      email: approver.email,
      fullName: approver.fullName,
      avatarUrl: approver.avatarUrl,
    },
    memberships: [
      {
        organizationUid: approver.organizationUid,
        organizationName: approver.organizationName,
        role: approver.role,
        isDefault: true,
      },
    ],
  };
  return {
    approver,
    ctx: {
      organizationUid: link.organizationUid,
      role: approver.role,
      principal,
      actor: actorOf(principal),
      requestId: origin.requestId,
      clientAddress: origin.clientAddress,
    },
  };
}

/**
 * The request context of the organization's member with this email (a Slack user matched by the
 * address Slack confirmed; docs/slack.md#who-clicked), or undefined when no member has it.
 */
export async function approverContextByEmail(
  db: DbOrTx,
  who: { organizationUid: string; email: string; slackUserId: string },
  origin: CallOrigin,
): Promise<{ ctx: RequestContext; approver: repo.ApproverRow } | undefined> {
  const userUid = await repo.findApproverUidByEmail(db, who.organizationUid, who.email);
  if (!userUid) return undefined;
  return approverContext(
    db,
    { organizationUid: who.organizationUid, userUid, jti: who.slackUserId },
    origin,
    'slack',
  );
}
