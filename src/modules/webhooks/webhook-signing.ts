import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * The event types an endpoint may subscribe to (docs/webhooks.md#event-types), `<entity>.<what
 * happened>`. Declared all at once so endpoints can subscribe now; the sources are wired module by module.
 */
export const EVENT_TYPES = [
  'invoice.created',
  'invoice.updated',
  'invoice.status_changed',
  'invoice.synced',
  'invoice.sync_failed',
  'payment.recorded',
  'payment.refunded',
  'payment.voided',
  'credit_note.created',
  'credit_note.voided',
  'party.updated',
  'work_task.created',
  'work_task.assigned',
  'work_task.approval_requested',
  'approval.decided',
  'agent_run.started',
  'agent_run.completed',
  'agent_run.failed',
  'email_draft.scheduled',
  'email_draft.sent',
  'email_draft.failed',
  'knowledge.processed',
  'knowledge.failed',
] as const;
export type SubscribableEventType = (typeof EVENT_TYPES)[number];

/**
 * Old names still accepted where a type is named (an endpoint's `event_types`, the `type` filter of
 * `GET /api/events`) and stored as the new one: one name per event in subscriptions, deliveries and the
 * event list (docs/webhooks.md#renamed-types). `work_task.approval_decided` became `approval.decided`,
 * the name issue 21 gives it.
 */
export const DEPRECATED_EVENT_TYPES = {
  'work_task.approval_decided': 'approval.decided',
} as const satisfies Record<string, SubscribableEventType>;
export type DeprecatedEventType = keyof typeof DEPRECATED_EVENT_TYPES;
/** What a caller may name: every type and the deprecated aliases. */
export const ACCEPTED_EVENT_TYPES = [
  ...EVENT_TYPES,
  ...(Object.keys(DEPRECATED_EVENT_TYPES) as DeprecatedEventType[]),
] as const;

/** The current name of a type a caller named (an alias becomes its new name). */
export function canonicalEventType<T extends string>(
  type: T,
): Exclude<T, DeprecatedEventType> | SubscribableEventType {
  return (
    (DEPRECATED_EVENT_TYPES as Record<string, SubscribableEventType>)[type] ??
    (type as Exclude<T, DeprecatedEventType>)
  );
}

/** Sent only by `POST …/webhook-endpoints/{uid}/test`, to that endpoint, whatever it subscribes to. */
export const TEST_EVENT_TYPE = 'webhook.test';
export type EventType = SubscribableEventType | typeof TEST_EVENT_TYPE;
export const ALL_EVENT_TYPES = [...EVENT_TYPES, TEST_EVENT_TYPE] as const;

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function generateWebhookSecret(): string {
  return `whsec_${crypto.randomBytes(32).toString('base64')}`;
}

/**
 * The three Standard Webhooks headers for one attempt. The id is the event's uid (the same on every
 * retry, so a receiver can drop duplicates); the signature is `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">`, one per valid secret, space-separated (during a rotation both verify).
 */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  at: Date,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
  };
}

/** Retries give up this long after the first attempt; then the delivery is `abandoned`. */
export const RETRY_WINDOW_MS = 3 * 86_400_000;
/** An endpoint whose every attempt has failed this long is disabled. */
export const DISABLE_AFTER_MS = RETRY_WINDOW_MS;

const BACKOFF_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000];

/**
 * When the next attempt goes, after `attempts` failed ones (the first retry 5 s after the first
 * failure, then 5 min, 30 min, 2 h, 5 h, then every 10 h), or null when that is past the retry window.
 */
export function nextAttemptAfter(attempts: number, firstAttemptAt: Date, now: Date): Date | null {
  const delay = BACKOFF_MS[Math.min(Math.max(attempts, 1), BACKOFF_MS.length) - 1]!;
  const next = new Date(now.getTime() + delay);
  return next.getTime() - firstAttemptAt.getTime() > RETRY_WINDOW_MS ? null : next;
}
