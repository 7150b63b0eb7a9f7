import type { Config } from '../../config.ts';
import { approvalChanged } from './approval-state.service.ts';
import { ChatDeliveryError, chatRetryDelaySeconds, type ChatClient } from '../../platform/chat/chat.ts';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import type { MailTransports } from '../../platform/mail/mailer.ts';
import { jobOrigin, recordUpdate } from '../audit/audit.service.ts';
import { sendSystemMail } from '../people/system-mail.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import * as repo from './work-tasks.repository.ts';
import { utcText } from '../../platform/utc-text.ts';
import { change, REMIT_ACTOR, taskEntity, viewTask } from './work-tasks.service.ts';

/**
 * The deadlines of approval policies (docs/approvals.md#expiry-and-escalation), worked by two jobs a
 * minute: an approval past `expires_at` ends `expired` without its action (fail closed); one past
 * `escalate_at` tells the policy's further people and channel, once, and lets those people decide it.
 * Each takes `now` so tests move the clock instead of waiting. Every task is handled in a transaction
 * of its own under its row lock, so several workers (or a decision at the same moment) act once.
 */

export { APPROVAL_EXPIRY_QUEUE, APPROVAL_ESCALATION_QUEUE } from './approval-deadline-queues.ts';
export const ESCALATION_NOTICE_QUEUE = 'remit.approvals.escalation_notice';

/** Not the request's audit fields: what the log records of a change made by a deadline. */
const TASK_NOISE = ['revision'];

/** Runs `act` on every due task, a batch at a time, until none is left (or none could be acted on). */
async function sweep(
  due: () => Promise<repo.DueTask[]>,
  act: (task: repo.DueTask) => Promise<boolean>,
  batch: number,
): Promise<number> {
  let done = 0;
  for (;;) {
    const tasks = await due();
    let progressed = false;
    for (const task of tasks) {
      if (await act(task)) {
        done += 1;
        progressed = true;
      }
    }
    if (tasks.length < batch || !progressed) return done;
  }
}

/**
 * Ends every undecided approval whose deadline is at or before `now`: status `canceled`, resolution
 * `expired`, no follow-up run (the agent's action does not happen), a change-log entry by Remit, the
 * audit event `task.expired` and the webhook `approval.decided` with decision `expired`.
 * Returns how many.
 */
export async function expireDueApprovals(db: Db, jobs: Jobs, now = new Date(), batch = 100): Promise<number> {
  return sweep(
    () => repo.dueExpiries(db, now, batch),
    (task) => db.transaction((tx) => expireApproval(tx, jobs, task, now)),
    batch,
  );
}

async function expireApproval(tx: DbOrTx, jobs: Jobs, due: repo.DueTask, now: Date): Promise<boolean> {
  const org = due.organizationUid;
  const task = await repo.findTask(tx, [org], due.uid, { forUpdate: true });
  // Decided meanwhile (the lock waited for that decision), or not due after all.
  if (!task || task.resolution || !task.expiresAt || task.expiresAt > now) return false;
  const approvals = await repo.countApprovals(tx, org, task.uid);
  const expired = await repo.resolveTask(tx, org, task.uid, {
    status: 'canceled',
    resolution: 'expired',
    resolvedByUserUid: null,
    resolutionNote: null,
    toolArgs: task.toolArgs,
  });
  if (!expired) return false;
  await recordUpdate(tx, jobOrigin(null), {
    organizationUid: org,
    action: 'task.expired',
    entityUid: task.uid,
    before: task,
    after: expired,
    options: { omit: TASK_NOISE },
  });
  await repo.insertChanges(tx, org, task.uid, [
    change(REMIT_ACTOR, 'expired', {
      expires_at: task.expiresAt,
      approvals,
      required_approvals: task.policy?.required_approvals ?? 1,
    }),
  ]);
  const view = await viewTask(tx, expired);
  await approvalChanged(tx, jobs, { organizationUid: org, taskUid: task.uid, kind: 'decided' });
  await emitEvent(tx, jobs, { organizationUid: org }, 'approval.decided', taskEntity(expired), {
    work_task: view,
    decision: 'expired',
  });
  return true;
}

/** One person or one channel to tell about one escalated approval: a job each, retried alone. */
export interface EscalationNoticeData {
  organization_uid: string;
  task_uid: string;
  user_uid?: string;
  channel_id?: string;
  /** The how-manieth post of a channel notice this is (Slack's temporary refusals are tried again). */
  attempt?: number;
}

/**
 * Escalates every undecided approval whose escalation time is at or before `now` and that was not
 * escalated yet: `escalated_at` is set under the row lock (a second worker, or the next minute's run,
 * finds it set and does nothing), the policy's `escalate_to_user_uids` join the task's approvers, and
 * one notice job per person and for the channel is enqueued in the same transaction (sent after
 * commit, never inside it). Returns how many.
 */
export async function escalateDueApprovals(
  db: Db,
  jobs: Jobs,
  now = new Date(),
  batch = 100,
): Promise<number> {
  return sweep(
    () => repo.dueEscalations(db, now, batch),
    (task) => db.transaction((tx) => escalateApproval(tx, jobs, task, now)),
    batch,
  );
}

async function escalateApproval(tx: DbOrTx, jobs: Jobs, due: repo.DueTask, now: Date): Promise<boolean> {
  const org = due.organizationUid;
  const task = await repo.findTask(tx, [org], due.uid, { forUpdate: true });
  if (!task?.policy || task.resolution || task.escalatedAt || !task.escalateAt || task.escalateAt > now)
    return false;
  const policy = task.policy;
  const added = policy.escalate_to_user_uids.filter((uid) => !policy.approver_user_uids.includes(uid));
  const escalated = await repo.markEscalated(tx, org, task.uid, {
    ...policy,
    approver_user_uids: [...policy.approver_user_uids, ...added],
  });
  if (!escalated) return false;
  await recordUpdate(tx, jobOrigin(null), {
    organizationUid: org,
    action: 'task.escalated',
    entityUid: task.uid,
    before: task,
    after: escalated,
    options: { omit: TASK_NOISE },
  });
  await repo.insertChanges(tx, org, task.uid, [
    change(REMIT_ACTOR, 'escalated', {
      to_user_uids: policy.escalate_to_user_uids,
      chat_channel_id: policy.escalate_to_chat_channel_id,
      added_approver_user_uids: added,
    }),
  ]);
  const notice = { organization_uid: org, task_uid: task.uid };
  const retries = { retryLimit: 5, retryDelaySeconds: 60 };
  for (const userUid of policy.escalate_to_user_uids)
    await jobs.enqueue<EscalationNoticeData>(
      tx,
      ESCALATION_NOTICE_QUEUE,
      { ...notice, user_uid: userUid },
      retries,
    );
  if (policy.escalate_to_chat_channel_id)
    await jobs.enqueue<EscalationNoticeData>(
      tx,
      ESCALATION_NOTICE_QUEUE,
      { ...notice, channel_id: policy.escalate_to_chat_channel_id },
      retries,
    );
  return true;
}

export interface NoticeDeps {
  db: Db;
  config: Pick<Config, 'mailFrom' | 'publicBaseUrl'>;
  mail: MailTransports;
  chat: ChatClient;
  jobs: Jobs;
}

/**
 * The notice job: an email to one person (Remit's own mail, as invitations go) or a post to the
 * channel (when Slack is configured), each with the console link to the approval. Nothing is sent for
 * an approval decided meanwhile, or to a person no longer in the organization. A failed send throws,
 * for the job's retry of that one notice.
 */
export async function sendEscalationNotice(
  deps: NoticeDeps,
  data: EscalationNoticeData,
): Promise<'sent' | 'skipped' | 'retry'> {
  const org = data.organization_uid;
  const task = await repo.findTask(deps.db, [org], data.task_uid);
  if (!task || task.resolution) return 'skipped';
  const text = await noticeText(deps, task);
  if (data.user_uid) {
    if (!(await repo.isMember(deps.db, org, data.user_uid))) return 'skipped';
    const [user] = await repo.loadUsers(deps.db, [data.user_uid]);
    if (!user) return 'skipped';
    await sendSystemMail(deps, {
      to: user.email,
      subject: `Remit: approval waiting: ${task.title}`,
      text,
    });
    return 'sent';
  }
  if (data.channel_id) {
    if (deps.chat.kind === 'none') return 'skipped';
    try {
      await deps.chat.postMessage(data.channel_id, text);
    } catch (error) {
      // Slack's "not now" (429 with Retry-After, 5xx, a timeout): this notice again, when Slack says.
      const attempt = data.attempt ?? 1;
      if (!(error instanceof ChatDeliveryError) || !error.transient || attempt >= MAX_CHANNEL_ATTEMPTS)
        throw error;
      const startAfter = new Date(Date.now() + chatRetryDelaySeconds(attempt, error) * 1000);
      await deps.db.transaction((tx) =>
        deps.jobs.enqueue<EscalationNoticeData>(
          tx,
          ESCALATION_NOTICE_QUEUE,
          { ...data, attempt: attempt + 1 },
          { startAfter, retryLimit: 0 },
        ),
      );
      return 'retry';
    }
    return 'sent';
  }
  return 'skipped';
}

/** Posts of one escalation notice to a channel before it is given up (Slack kept refusing). */
const MAX_CHANNEL_ATTEMPTS = 8;

async function noticeText(deps: NoticeDeps, task: repo.TaskRow): Promise<string> {
  const org = task.organizationUid;
  const [agent] = task.originAgentUid ? await repo.loadAgentNames(deps.db, org, [task.originAgentUid]) : [];
  const approvals = await repo.countApprovals(deps.db, org, task.uid);
  const policy = task.policy;
  const required = policy?.required_approvals ?? 1;
  return [
    `${agent?.name ?? 'An agent'} asked for approval on ${utcText(task.createdAt)} and nobody has decided yet:`,
    `"${task.title}"`,
    '',
    ...(policy
      ? [`Policy "${policy.name}": ${required} approval(s) needed, ${approvals} received so far.`]
      : []),
    ...(task.expiresAt
      ? [`It expires at ${utcText(task.expiresAt)}; after that the action will not happen.`]
      : []),
    '',
    `Approve or reject it in Remit: ${deps.config.publicBaseUrl}/app/inbox/${task.uid}`,
  ].join('\n');
}
