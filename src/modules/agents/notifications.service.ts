import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { ChatClient } from '../../platform/chat/chat.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { enqueueDelivery, refreshOnApprovalChange } from './notification-delivery.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { findAgent, listAgentsWithDigest, type AgentRow } from './agents.repository.ts';
import { getAgentRow } from './agents.service.ts';
import type { NotificationEvent } from './agents.tables.ts';
import * as repo from './notifications.repository.ts';
import { organizationSlackChannel } from '../tenancy/organization-settings.service.ts';

/**
 * Interface §6 defaults, used when an agent has no notification settings (then posted to the
 * organization's default channel, if it has one).
 */
const DEFAULT_SWITCHES: Record<NotificationEvent, boolean> = {
  action_taken: true,
  approval_required: true,
  outcome: true,
  error: true,
  digest: false,
};

export interface NotifyDeps {
  /** The database, or the transaction the notice is part of (then it commits with it). */
  db: DbOrTx;
  chat: ChatClient;
  jobs: Jobs;
}

export interface Notice {
  agent: AgentRow;
  event: NotificationEvent;
  text: string;
  runUid?: string | null;
  taskUid?: string | null;
  invoiceUid?: string | null;
  /** Sandbox runs record what they would have said; nothing is posted. */
  sandbox?: boolean;
}

export function isSwitchedOn(agent: AgentRow, event: NotificationEvent): boolean {
  return (agent.notificationConfig?.events ?? DEFAULT_SWITCHES)[event];
}

/**
 * Records an agent event and, when a chat service and a channel are configured, enqueues its post in
 * the same transaction: the post happens after commit, in a job, retried while Slack is down or
 * rate-limiting (docs/agents.md#notifications). Switched-off events are neither recorded nor posted.
 */
export async function notify(deps: NotifyDeps, notice: Notice): Promise<repo.NotificationRow | null> {
  return deps.db.transaction(async (tx) => {
    const row = await recordNotice(tx, deps.chat, notice);
    if (row?.deliveryStatus === 'pending') await enqueueDelivery(tx, deps.jobs, row);
    // An approval asked again (revised after feedback): its earlier messages show what it is now.
    if (row?.event === 'approval_required' && row.taskUid)
      await refreshOnApprovalChange(tx, deps.jobs, {
        organizationUid: row.organizationUid,
        taskUid: row.taskUid,
      });
    return row;
  });
}

/**
 * Writes the notification (`pending` when it is to be posted, else `recorded`), or nothing when the
 * event is switched off. Posting is `deliver`'s, outside any transaction.
 */
async function recordNotice(
  db: DbOrTx,
  chat: ChatClient,
  notice: Notice,
): Promise<repo.NotificationRow | null> {
  const { agent } = notice;
  if (!isSwitchedOn(agent, notice.event)) return null;
  const channelId = await channelOf(db, agent);
  const willPost = chat.kind !== 'none' && channelId !== null && !notice.sandbox;
  return repo.insertNotification(db, {
    organizationUid: agent.organizationUid,
    agentUid: agent.uid,
    runUid: notice.runUid ?? null,
    taskUid: notice.taskUid ?? null,
    invoiceUid: notice.invoiceUid ?? null,
    event: notice.event,
    channelId,
    text: notice.sandbox ? `[sandbox] ${notice.text}` : notice.text,
    deliveryStatus: willPost ? 'pending' : 'recorded',
  });
}

/**
 * Where an agent's notifications go: its own channel (`notification_config.chat_channel_id`, required
 * inside the object); an agent without notification settings uses the organization's default channel
 * (settings `slack_channel_id`), or none. Read as the notice is recorded, so a changed default applies
 * to the next notice.
 */
async function channelOf(db: DbOrTx, agent: AgentRow): Promise<string | null> {
  if (agent.notificationConfig) return agent.notificationConfig.chat_channel_id;
  return organizationSlackChannel(db, agent.organizationUid);
}

export function toNotificationView(row: repo.NotificationRow) {
  return {
    uid: row.uid,
    agent_uid: row.agentUid,
    event: row.event,
    channel_id: row.channelId,
    text: row.text,
    delivery_status: row.deliveryStatus,
    delivery_error: row.deliveryError,
    delivery_attempts: row.attempts,
    next_attempt_at: row.deliveryStatus === 'pending' ? row.nextAttemptAt : null,
    run_uid: row.runUid,
    task_uid: row.taskUid,
    invoice_uid: row.invoiceUid,
    created_at: row.createdAt,
    delivered_at: row.deliveredAt,
  };
}

export async function listNotifications(
  db: Db,
  ctx: RequestContext,
  agentUid: string,
  filters: { event?: NotificationEvent | undefined; runUid?: string | undefined },
  page: PageRequest,
) {
  const agent = await getAgentRow(db, ctx, agentUid);
  // A run of another agent or organization simply matches nothing: the filter reveals no run.
  const { rows, total } = await repo.listNotifications(db, agent.organizationUid, agent.uid, {
    event: filters.event,
    runUid: filters.runUid,
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(toNotificationView), total };
}

/**
 * The daily digest: for every agent with `digest` switched on, one summary of the last 24 hours. A
 * second call within 20 hours sends nothing, so a repeated or overlapping job cannot double it: the
 * check, the digest's row and its post's job are written under the agent's lock.
 */
export async function sendDigests(deps: NotifyDeps, now: Date = new Date()): Promise<number> {
  const candidates = await listAgentsWithDigest(deps.db);
  const since = new Date(now.getTime() - 24 * 3_600_000);
  let sent = 0;
  const recent = new Date(now.getTime() - 20 * 3_600_000);
  for (const candidate of candidates) {
    const row = await deps.db.transaction(async (tx) => {
      const agent = await findAgent(tx, [candidate.organizationUid], candidate.uid, { forUpdate: true });
      if (!agent || !isSwitchedOn(agent, 'digest')) return null;
      if (await repo.hasNotificationSince(tx, agent.organizationUid, agent.uid, 'digest', recent))
        return null;
      const digest = await recordNotice(tx, deps.chat, {
        agent,
        event: 'digest',
        text: await digestText(tx, agent, since),
      });
      if (digest?.deliveryStatus === 'pending') await enqueueDelivery(tx, deps.jobs, digest);
      return digest;
    });
    if (!row) continue;
    sent += 1;
  }
  return sent;
}

async function digestText(db: DbOrTx, agent: AgentRow, since: Date): Promise<string> {
  const c = await repo.digestCounts(db, agent.organizationUid, agent.uid, since);
  return (
    `Daily digest for ${agent.name}: ${c.runs} run(s) started, ${c.completed} completed, ${c.failed} failed; ` +
    `${c.approvals_raised} approval(s) requested, ${c.approvals_resolved} resolved in the last 24 hours.`
  );
}
