import type { ChatClient } from '../../platform/chat/chat.ts';
import { ChatDeliveryError, chatRetryDelaySeconds as retryDelaySeconds } from '../../platform/chat/chat.ts';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { currentStateKey, NOTIFICATION_METADATA_TYPE, renderNotice } from './notification-messages.ts';
import * as repo from './notifications.repository.ts';

/** One job per post: enqueued with the notification's row, so a committed notice is always posted. */
export const CHAT_DELIVERY_QUEUE = 'remit.chat.deliver';
/** Updates the posted messages about an approval once it changes (decided, expired, a vote). */
export const CHAT_REFRESH_QUEUE = 'remit.chat.refresh';
/** Every minute: pending posts that no job is working on are enqueued again. */
export const CHAT_SWEEP_QUEUE = 'remit.chat.sweep';

/** Tries before a post is given up as `failed` (with backoff that is about 40 minutes of trying). */
export const MAX_DELIVERY_ATTEMPTS = 8;
/** An attempt under way for longer than this was cut short by a crash (a post takes ≤ SLACK_TIMEOUT_MS). */
const ATTEMPT_LEASE_MS = 2 * 60_000;
/** A pending post this overdue has lost its job (the sweep's threshold). */
const STRANDED_AFTER_MS = 2 * 60_000;

export interface DeliveryJobData {
  organization_uid: string;
  notification_uid: string;
}

export interface RefreshJobData {
  organization_uid: string;
  task_uid: string;
  attempt?: number;
}

export interface DeliveryDeps {
  db: Db;
  chat: ChatClient;
  jobs: Jobs;
  publicBaseUrl: string;
}

/** The queue's own retries are for our failures (the database); Slack's are counted on the row. */
const JOB_OPTIONS = { retryLimit: 5, retryDelaySeconds: 10 };

export async function enqueueDelivery(
  tx: DbOrTx,
  jobs: Jobs,
  row: Pick<repo.NotificationRow, 'uid' | 'organizationUid'>,
  startAfter?: Date,
): Promise<void> {
  await jobs.enqueue<DeliveryJobData>(
    tx,
    CHAT_DELIVERY_QUEUE,
    { organization_uid: row.organizationUid, notification_uid: row.uid },
    { ...JOB_OPTIONS, ...(startAfter ? { startAfter } : {}) },
  );
}

function isTransient(error: unknown): boolean {
  return error instanceof ChatDeliveryError && error.transient;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export type DeliveryResult = 'sent' | 'retry' | 'failed' | 'skipped';

/**
 * One attempt at posting a notification. Claimed under the row's lock (another job already posting
 * it, or the post already done: nothing to do). An attempt that was cut short by a crash may have
 * posted: the channel is searched for a message carrying this notification's id before posting again.
 * A refusal that waiting can cure (429, 5xx, a timeout) is tried again later — at Slack's Retry-After
 * or with backoff — up to MAX_DELIVERY_ATTEMPTS; any other refusal fails the notification at once.
 */
export async function deliverNotification(
  deps: DeliveryDeps,
  data: DeliveryJobData,
  now: () => Date = () => new Date(),
): Promise<DeliveryResult> {
  const org = data.organization_uid;
  const claimed = await deps.db.transaction(async (tx) => {
    const row = await repo.findNotification(tx, org, data.notification_uid, { forUpdate: true });
    if (!row || row.deliveryStatus !== 'pending' || row.channelId === null) return null;
    const at = now();
    // Not yet due: an early duplicate of a job scheduled for later (the sweep's, say).
    if (row.nextAttemptAt && row.nextAttemptAt.getTime() > at.getTime() + 5000) return null;
    const interrupted = row.attemptStartedAt;
    if (interrupted && at.getTime() - interrupted.getTime() < ATTEMPT_LEASE_MS) return null;
    const started = await repo.startAttempt(tx, org, row.uid, at);
    return started ? { row: started, interrupted } : null;
  });
  if (!claimed) return 'skipped';
  const { row, interrupted } = claimed;
  const channel = row.channelId!;
  let ts: string | null = null;
  let stateKey = '';
  try {
    if (interrupted) {
      // At most once where Slack lets us tell: the crashed attempt's message, if it got through.
      ts = await deps.chat
        .findMessage(channel, new Date(interrupted.getTime() - 60_000), {
          eventType: NOTIFICATION_METADATA_TYPE,
          key: 'notification_uid',
          value: row.uid,
        })
        .catch(() => null);
    }
    const rendered = await renderNotice(deps.db, row, {
      publicBaseUrl: deps.publicBaseUrl,
      interactive: deps.chat.interactive,
    });
    stateKey = rendered.stateKey;
    if (ts === null) ts = await deps.chat.postMessage(channel, rendered.message);
  } catch (error) {
    const transient = isTransient(error) && row.attempts < MAX_DELIVERY_ATTEMPTS;
    await deps.db.transaction(async (tx) => {
      if (transient) {
        const nextAttemptAt = new Date(now().getTime() + retryDelaySeconds(row.attempts, error) * 1000);
        await repo.scheduleRetry(tx, org, row.uid, { deliveryError: messageOf(error), nextAttemptAt });
        await enqueueDelivery(tx, deps.jobs, row, nextAttemptAt);
      } else {
        await repo.recordDelivery(tx, org, row.uid, {
          deliveryStatus: 'failed',
          deliveryError: isTransient(error)
            ? `${messageOf(error)} (gave up after ${row.attempts} attempts)`
            : messageOf(error),
          externalId: null,
        });
      }
    });
    return transient ? 'retry' : 'failed';
  }
  const sent = await repo.recordDelivery(deps.db, org, row.uid, {
    deliveryStatus: 'sent',
    deliveryError: null,
    externalId: ts,
  });
  // Decided while it was being posted: the refresh then found no message to update, so this one does.
  if (sent && (await currentStateKey(deps.db, sent)) !== stateKey)
    await refreshMessage(deps, sent).catch(() => undefined);
  return 'sent';
}

async function refreshMessage(deps: DeliveryDeps, row: repo.NotificationRow): Promise<void> {
  const rendered = await renderNotice(deps.db, row, {
    publicBaseUrl: deps.publicBaseUrl,
    interactive: deps.chat.interactive,
  });
  await deps.chat.updateMessage(row.channelId!, row.externalId!, rendered.message);
}

/**
 * Updates every posted message about an approval in place (who decided and when; the buttons gone).
 * Slack's temporary refusals are tried again (a new job at Retry-After or backoff, five times in all);
 * others are given up (a deleted message, a channel the bot left).
 */
export async function refreshApprovalMessages(
  deps: DeliveryDeps,
  data: RefreshJobData,
  now: () => Date = () => new Date(),
): Promise<number> {
  if (deps.chat.kind === 'none') return 0;
  const rows = await repo.listPostedAbout(deps.db, data.organization_uid, data.task_uid);
  let updated = 0;
  let retry: unknown;
  for (const row of rows) {
    try {
      await refreshMessage(deps, row);
      updated += 1;
    } catch (error) {
      if (isTransient(error)) retry = error;
    }
  }
  const attempt = data.attempt ?? 1;
  if (retry !== undefined && attempt < 5) {
    const startAfter = new Date(now().getTime() + retryDelaySeconds(attempt, retry) * 1000);
    await deps.db.transaction((tx) =>
      deps.jobs.enqueue<RefreshJobData>(
        tx,
        CHAT_REFRESH_QUEUE,
        { ...data, attempt: attempt + 1 },
        {
          ...JOB_OPTIONS,
          startAfter,
        },
      ),
    );
  }
  return updated;
}

/**
 * Pending posts whose job was lost (a worker that kept crashing used up the queue's retries, or the
 * notice was recorded by a version that posted in-process and died first): enqueued again. Each is
 * marked as swept, so a sweep a minute later leaves it to the job it just got.
 */
export async function sweepStrandedDeliveries(
  deps: Pick<DeliveryDeps, 'db' | 'jobs'>,
  now: Date = new Date(),
  limit = 200,
): Promise<number> {
  const rows = await repo.listStrandedPending(
    deps.db,
    new Date(now.getTime() - STRANDED_AFTER_MS),
    new Date(now.getTime() - ATTEMPT_LEASE_MS),
    limit,
  );
  for (const row of rows) {
    await deps.db.transaction(async (tx) => {
      await repo.markSwept(tx, row.organizationUid, row.uid, now);
      await enqueueDelivery(tx, deps.jobs, row);
    });
  }
  return rows.length;
}

/**
 * Registered with the work-tasks module (src/app.ts): when an approval is decided, expires or gets a
 * vote, its posted messages are updated by a job enqueued in that same transaction.
 */
export async function refreshOnApprovalChange(
  tx: DbOrTx,
  jobs: Jobs,
  change: { organizationUid: string; taskUid: string },
): Promise<void> {
  const posted = await repo.listPostedAbout(tx, change.organizationUid, change.taskUid);
  if (posted.length === 0) return;
  await jobs.enqueue<RefreshJobData>(
    tx,
    CHAT_REFRESH_QUEUE,
    { organization_uid: change.organizationUid, task_uid: change.taskUid },
    JOB_OPTIONS,
  );
}
