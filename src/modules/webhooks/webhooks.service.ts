import crypto from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Config } from '../../config.ts';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { requirePermission, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { assertPublicTarget, OutboundError, sendOutbound } from '../../platform/http/outbound.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import type { JobDeps } from '../../platform/http/types.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import type { MailTransports } from '../../platform/mail/mailer.ts';
import type { Metrics } from '../../platform/observability/metrics.ts';
import type { SecretBox } from '../../platform/secrets/secret-box.ts';
import {
  changesBetween,
  REDACTED,
  jobOrigin,
  recordAuditEvent,
  recordUpdate,
  type AuditOrigin,
} from '../audit/audit.service.ts';
import {
  canonicalEventType,
  DISABLE_AFTER_MS,
  generateWebhookSecret,
  nextAttemptAfter,
  signedHeaders,
  TEST_EVENT_TYPE,
  type DeprecatedEventType,
  type EventType,
  type SubscribableEventType,
} from './webhook-signing.ts';
import { sendSystemMail } from '../people/system-mail.ts';
import { findOrganization, listAdminContacts } from '../tenancy/tenancy.service.ts';
import * as repo from './webhooks.repository.ts';

export { EVENT_TYPES, type SubscribableEventType } from './webhook-signing.ts';

export const WEBHOOK_DELIVER_QUEUE = 'remit.webhooks.deliver';
/** Events are listed and kept this long (`GET /api/events`, the retention job). */
export const EVENT_RETENTION_MS = 30 * 86_400_000;
/** The previous secret keeps signing this long after a rotation. */
export const ROTATION_OVERLAP_MS = 86_400_000;
/** How much of an endpoint's answer the delivery log keeps. */
export const RESPONSE_EXCERPT_CHARS = 1000;

export interface WebhookOptions {
  allowPrivateNetworkTargets: boolean;
  timeoutMs: number;
  /** How long a claimed attempt is presumed alive before another worker may send it again. */
  leaseMs: number;
  secrets: SecretBox;
  /** The queue the delivery jobs (and an endpoint's disabled notice) are enqueued into. */
  jobs: Jobs;
  /** Attempts in flight at once to one endpoint, and of one organization (over all processes). */
  caps: repo.InFlightCaps;
  metrics?: Metrics | undefined;
}

export function webhookOptionsOf(
  deps: Pick<JobDeps, 'config' | 'secrets' | 'metrics' | 'jobs'>,
): WebhookOptions {
  return {
    allowPrivateNetworkTargets: deps.config.allowPrivateNetworkTargets,
    timeoutMs: deps.config.webhookTimeoutMs,
    leaseMs: deps.config.webhookLeaseMs,
    secrets: deps.secrets,
    jobs: deps.jobs,
    caps: {
      endpoint: deps.config.webhookEndpointMaxInFlight,
      organization: deps.config.webhookOrganizationMaxInFlight,
    },
    metrics: deps.metrics,
  };
}

/** A job per delivery, in `tx`: it exists exactly when the delivery row commits. */
async function enqueueDelivery(
  tx: DbOrTx,
  jobs: Jobs,
  delivery: repo.DeliveryRow,
  startAfter?: Date,
): Promise<void> {
  await jobs.enqueue(
    tx,
    WEBHOOK_DELIVER_QUEUE,
    { organization_uid: delivery.organizationUid, delivery_uid: delivery.uid },
    startAfter ? { startAfter } : {},
  );
}

const secretPurpose = (endpointUid: string) => `webhook_endpoints.secret:${endpointUid}`;
const previousSecretPurpose = (endpointUid: string) => `webhook_endpoints.previous_secret:${endpointUid}`;

// ---- emitting ----

export interface EventEntity {
  /** `invoice`, `work_task`, … */
  type: string;
  uid: string;
  /** The entity's organization when it is not the call's own (a task resolved from another membership). */
  organizationUid?: string | undefined;
}

/**
 * The one call a module makes when something webhook-worthy happened: writes the event to the outbox
 * and one pending delivery per enabled endpoint subscribed to it, in the caller's transaction `tx` (a
 * rollback takes them too), and enqueues their delivery jobs in it on `jobs` (the process's queue,
 * handed down from the composition root like every other job). Nothing is sent here.
 */
export async function emitEvent(
  tx: DbOrTx,
  jobs: Jobs,
  ctx: { organizationUid: string },
  type: SubscribableEventType,
  entity: EventEntity,
  payload: Record<string, unknown>,
): Promise<repo.EventRow> {
  const organizationUid = entity.organizationUid ?? ctx.organizationUid;
  const endpoints = await repo.endpointsFor(tx, organizationUid, type);
  return writeEvent(
    tx,
    jobs,
    organizationUid,
    type,
    entity,
    payload,
    endpoints.map((e) => e.uid),
  );
}

async function writeEvent(
  tx: DbOrTx,
  jobs: Jobs,
  organizationUid: string,
  type: EventType,
  entity: EventEntity,
  payload: Record<string, unknown>,
  endpointUids: string[],
): Promise<repo.EventRow & { deliveries: repo.DeliveryRow[] }> {
  const event = await repo.insertEvent(tx, {
    organizationUid,
    type,
    entityType: entity.type,
    entityUid: entity.uid,
    payload,
  });
  const deliveries = await repo.insertDeliveries(
    tx,
    endpointUids.map((endpointUid) => ({
      organizationUid,
      endpointUid,
      eventUid: event.uid,
      entityType: entity.type,
      entityUid: entity.uid,
      nextAttemptAt: event.createdAt,
    })),
  );
  for (const delivery of deliveries) await enqueueDelivery(tx, jobs, delivery);
  return { ...event, deliveries };
}

// ---- views ----

/** The secret before the last rotation, while it still signs (its 24 h overlap); else null. */
function previousSecretInForce(row: repo.EndpointRow, now: Date): { sealed: string; expiresAt: Date } | null {
  return row.previousSecret !== null &&
    row.previousSecretExpiresAt !== null &&
    row.previousSecretExpiresAt.getTime() > now.getTime()
    ? { sealed: row.previousSecret, expiresAt: row.previousSecretExpiresAt }
    : null;
}

export function toEndpointView(row: repo.EndpointRow, now = new Date()) {
  const previous = previousSecretInForce(row, now);
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    url: row.url,
    description: row.description,
    event_types: row.eventTypes,
    enabled: row.enabled,
    disabled_reason: row.disabledReason,
    previous_secret_expires_at: previous?.expiresAt.toISOString() ?? null,
    failing_since: row.failingSince?.toISOString() ?? null,
    last_success_at: row.lastSuccessAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
export type EndpointView = ReturnType<typeof toEndpointView>;

export function toDeliveryView(row: repo.DeliveryWithEvent) {
  const open = row.status === 'pending' || row.status === 'failed';
  return {
    uid: row.uid,
    endpoint_uid: row.endpointUid,
    event_uid: row.eventUid,
    event_type: row.eventType,
    entity_type: row.entityType,
    entity_uid: row.entityUid,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: open ? row.nextAttemptAt.toISOString() : null,
    first_attempt_at: row.firstAttemptAt?.toISOString() ?? null,
    last_attempt_at: row.lastAttemptAt?.toISOString() ?? null,
    last_response_status: row.lastResponseStatus,
    last_duration_ms: row.lastDurationMs,
    last_response_excerpt: row.lastResponseExcerpt,
    last_error: row.lastError,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export function toEventView(row: repo.EventRow) {
  return {
    uid: row.uid,
    type: row.type,
    entity_type: row.entityType,
    entity_uid: row.entityUid,
    data: row.payload as Record<string, unknown>,
    created_at: row.createdAt.toISOString(),
  };
}

/** What the audit log records of an endpoint: never a secret, only whether one changed. */
const auditState = (row: repo.EndpointRow) => ({
  url: row.url,
  description: row.description,
  eventTypes: row.eventTypes,
  enabled: row.enabled,
  disabledReason: row.disabledReason,
});

// ---- endpoints ----

export interface EndpointInput {
  url?: string | undefined;
  description?: string | undefined;
  /** Current names or deprecated aliases (stored as current names). */
  event_types?: (SubscribableEventType | DeprecatedEventType)[] | undefined;
  enabled?: boolean | undefined;
}

/** Stored under their current names (an alias becomes its new name), once each, sorted. */
const uniqueTypes = (types: readonly string[] | undefined) =>
  [...new Set((types ?? []).map(canonicalEventType))].sort();

export async function createEndpoint(
  db: Db,
  ctx: RequestContext,
  body: EndpointInput & { url: string },
  options: WebhookOptions,
): Promise<EndpointView & { secret: string }> {
  requirePermission(ctx, 'webhooks:write');
  // Checked before the transaction: resolving the host is a network call.
  const url = await assertPublicTarget(body.url, options.allowPrivateNetworkTargets);
  const uid = crypto.randomUUID();
  const secret = generateWebhookSecret();
  return db.transaction(async (tx) => {
    const row = await repo.insertEndpoint(tx, {
      uid,
      organizationUid: ctx.organizationUid,
      url: url.toString(),
      description: body.description ?? '',
      eventTypes: uniqueTypes(body.event_types),
      enabled: body.enabled ?? true,
      secret: options.secrets.seal(secret, secretPurpose(uid)),
    });
    await recordAuditEvent(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'webhook_endpoint.created',
      entityUid: uid,
      changes: changesBetween(null, auditState(row)),
    });
    return { ...toEndpointView(row), secret };
  });
}

export async function listEndpoints(db: Db, ctx: RequestContext, page: PageRequest) {
  requirePermission(ctx, 'webhooks:read');
  const { items, total } = await repo.listEndpoints(db, ctx.organizationUid, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: items.map((row) => toEndpointView(row)), total };
}

/** An endpoint of the call's organization, else 404 (also what a change checks before its body). */
export async function endpointOrThrow(db: DbOrTx, ctx: RequestContext, uid: string, forUpdate = false) {
  const row = await repo.findEndpoint(db, ctx.organizationUid, uid, { forUpdate });
  if (!row) throw notFound('Webhook endpoint');
  return row;
}

export async function getEndpoint(db: Db, ctx: RequestContext, uid: string): Promise<EndpointView> {
  requirePermission(ctx, 'webhooks:read');
  return toEndpointView(await endpointOrThrow(db, ctx, uid));
}

export async function updateEndpoint(
  db: Db,
  ctx: RequestContext,
  uid: string,
  body: EndpointInput,
  options: WebhookOptions,
): Promise<EndpointView> {
  requirePermission(ctx, 'webhooks:write');
  const url =
    body.url !== undefined
      ? (await assertPublicTarget(body.url, options.allowPrivateNetworkTargets)).toString()
      : undefined;
  return db.transaction(async (tx) => {
    const before = await endpointOrThrow(tx, ctx, uid, true);
    const values: Partial<repo.EndpointRow> = {};
    if (url !== undefined) values.url = url;
    if (body.description !== undefined) values.description = body.description;
    if (body.event_types !== undefined) values.eventTypes = uniqueTypes(body.event_types);
    if (body.enabled !== undefined) {
      values.enabled = body.enabled;
      // Enabled again: the failure count starts over (the delivery log keeps what happened).
      if (body.enabled && !before.enabled) {
        Object.assign(values, { disabledReason: null, failingSince: null, consecutiveFailures: 0 });
      }
    }
    const after = (await repo.updateEndpoint(tx, ctx.organizationUid, uid, values))!;
    // Enabled again: what waited for it goes now, by jobs committed with the change, instead of at the
    // minute's sweep (which still takes any past this bound).
    if (after.enabled && !before.enabled) {
      const now = new Date();
      for (const delivery of await repo.releaseWaitingOfEndpoint(tx, ctx.organizationUid, uid, now, 500)) {
        await enqueueDelivery(tx, options.jobs, delivery);
      }
    }
    await recordUpdate(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'webhook_endpoint.updated',
      entityUid: uid,
      before: auditState(before),
      after: auditState(after),
    });
    return toEndpointView(after);
  });
}

export async function deleteEndpoint(db: Db, ctx: RequestContext, uid: string): Promise<EndpointView> {
  requirePermission(ctx, 'webhooks:write');
  return db.transaction(async (tx) => {
    const row = await endpointOrThrow(tx, ctx, uid, true);
    // Its deliveries go with it (their events stay listed by GET /api/events).
    await repo.deleteEndpoint(tx, ctx.organizationUid, uid);
    await recordAuditEvent(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'webhook_endpoint.deleted',
      entityUid: uid,
      changes: changesBetween(auditState(row), null),
    });
    return toEndpointView(row);
  });
}

/**
 * A new secret, answered once; the one it replaces keeps signing (a second signature in
 * `webhook-signature`) for 24 hours, so receivers can switch without missing a delivery.
 */
export async function rotateEndpointSecret(
  db: Db,
  ctx: RequestContext,
  uid: string,
  options: WebhookOptions,
  now = new Date(),
): Promise<EndpointView & { secret: string }> {
  requirePermission(ctx, 'webhooks:write');
  const secret = generateWebhookSecret();
  return db.transaction(async (tx) => {
    const row = await endpointOrThrow(tx, ctx, uid, true);
    const current = options.secrets.open(row.secret, secretPurpose(uid));
    const after = (await repo.updateEndpoint(tx, ctx.organizationUid, uid, {
      secret: options.secrets.seal(secret, secretPurpose(uid)),
      previousSecret: options.secrets.seal(current, previousSecretPurpose(uid)),
      previousSecretExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS),
    }))!;
    await recordAuditEvent(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'webhook_endpoint.secret_rotated',
      entityUid: uid,
      changes: { secret: { before: REDACTED, after: REDACTED } },
    });
    return { ...toEndpointView(after, now), secret };
  });
}

/** A `webhook.test` event to this endpoint alone, whatever it subscribes to; answers its delivery. */
export async function sendTestEvent(db: Db, jobs: Jobs, ctx: RequestContext, uid: string) {
  requirePermission(ctx, 'webhooks:write');
  return db.transaction(async (tx) => {
    const endpoint = await endpointOrThrow(tx, ctx, uid);
    if (!endpoint.enabled) {
      throw new AppError('invalid_state', 'The endpoint is disabled: enable it before sending a test event');
    }
    const event = await writeEvent(
      tx,
      jobs,
      ctx.organizationUid,
      TEST_EVENT_TYPE,
      { type: 'webhook_endpoint', uid },
      { webhook_endpoint_uid: uid, message: 'A test event sent from Remit' },
      [uid],
    );
    return toDeliveryView({ ...event.deliveries[0]!, eventType: event.type });
  });
}

export async function listDeliveries(
  db: Db,
  ctx: RequestContext,
  endpointUid: string,
  filter: { status?: string | undefined },
  page: PageRequest,
) {
  requirePermission(ctx, 'webhooks:read');
  await endpointOrThrow(db, ctx, endpointUid);
  const { items, total } = await repo.listDeliveries(db, ctx.organizationUid, endpointUid, filter, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: items.map(toDeliveryView), total };
}

/**
 * Sends a delivery again, whatever became of it: it is due at once, with a new 3-day retry window, and
 * keeps its `webhook-id` (the event's uid), so a receiver that already has it can tell.
 */
export async function resendDelivery(db: Db, jobs: Jobs, ctx: RequestContext, deliveryUid: string) {
  requirePermission(ctx, 'webhooks:write');
  return db.transaction(async (tx) => {
    const delivery = await repo.findDelivery(tx, ctx.organizationUid, deliveryUid);
    if (!delivery) throw notFound('Webhook delivery');
    const endpoint = await endpointOrThrow(tx, ctx, delivery.endpointUid, true);
    if (!endpoint.enabled) {
      throw new AppError('invalid_state', 'The endpoint is disabled: enable it before resending');
    }
    const row = (await repo.settleDelivery(tx, ctx.organizationUid, deliveryUid, {
      status: 'pending',
      nextAttemptAt: new Date(),
      firstAttemptAt: null,
      leasedUntil: null,
    }))!;
    await enqueueDelivery(tx, jobs, row);
    return toDeliveryView({ ...row, eventType: delivery.eventType });
  });
}

// ---- events (polling) ----

export async function listEvents(
  db: Db,
  ctx: RequestContext,
  filter: { type?: string | undefined; entity_uid?: string | undefined },
  page: PageRequest,
  now = new Date(),
) {
  requirePermission(ctx, 'webhooks:read');
  const { items, total } = await repo.listEvents(
    db,
    ctx.organizationUid,
    {
      since: new Date(now.getTime() - EVENT_RETENTION_MS),
      type: filter.type === undefined ? undefined : canonicalEventType(filter.type),
      entityUid: filter.entity_uid,
    },
    { limit: page.perPage, offset: offsetOf(page) },
  );
  return { items: items.map(toEventView), total };
}

// ---- delivering ----

export type DeliveryOutcome = 'skipped' | 'succeeded' | 'failed' | 'abandoned';

/**
 * One attempt of one delivery: claimed in a short transaction (the attempt is counted and a lease
 * taken before anything is sent), sent with no transaction open, and settled in a second one. A
 * worker killed between the two leaves the delivery pending with an expiring lease. The claim also
 * enqueues a job for the moment the lease ends: if the attempt was settled by then it finds nothing to
 * do, else it sends the delivery again (at least once; receivers drop duplicates by `webhook-id`). The
 * minute's sweep is the fallback. `now` is the clock (tests move it).
 */
export async function deliverWebhook(
  db: Db,
  options: WebhookOptions,
  deliveryUid: string,
  now = new Date(),
): Promise<DeliveryOutcome> {
  const leasedUntil = new Date(now.getTime() + options.leaseMs);
  const claimed = await db.transaction(async (tx) => {
    // Claims of one organization one at a time, so its caps hold however many workers claim at once.
    if (!(await repo.lockDeliveryOrganization(tx, deliveryUid))) return undefined;
    // Over a cap, the delivery is left pending and this worker is free at once: the attempt that
    // settles next in its organization enqueues it again (releaseNextUnderCaps), the sweep otherwise.
    const delivery = await repo.claimDelivery(tx, deliveryUid, now, leasedUntil, options.caps);
    if (!delivery) return undefined;
    // Whoever takes this job once the lease has ended finds the delivery settled (and skips it) unless
    // this worker died mid-send: then it is the next attempt, seconds after the lease rather than at
    // the next minute's sweep.
    await enqueueDelivery(tx, options.jobs, delivery, leasedUntil);
    const endpoint = await repo.findEndpoint(tx, delivery.organizationUid, delivery.endpointUid);
    const event = await repo.findEvent(tx, delivery.organizationUid, delivery.eventUid);
    return { delivery, endpoint: endpoint!, event: event! };
  });
  if (!claimed) return 'skipped';
  const { delivery, endpoint, event } = claimed;

  const body = JSON.stringify({
    type: event.type,
    timestamp: event.createdAt.toISOString(),
    data: event.payload,
  });
  const started = performance.now();
  let status: number | null = null;
  let excerpt: string | null = null;
  let error: string | null = null;
  try {
    const secrets = [options.secrets.open(endpoint.secret, secretPurpose(endpoint.uid))];
    const previous = previousSecretInForce(endpoint, now);
    if (previous) secrets.push(options.secrets.open(previous.sealed, previousSecretPurpose(endpoint.uid)));
    // The address rules again, on the address actually connected to (DNS may have changed).
    const response = await sendOutbound(endpoint.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Remit-Webhooks/1',
        ...signedHeaders(secrets, event.uid, now, body),
      },
      body,
      timeoutMs: options.timeoutMs,
      allowPrivate: options.allowPrivateNetworkTargets,
      metrics: options.metrics,
    });
    status = response.status;
    excerpt = response.body.slice(0, RESPONSE_EXCERPT_CHARS);
    if (status < 200 || status >= 300) error = `answered ${status}`;
  } catch (caught) {
    error =
      caught instanceof OutboundError && caught.kind === 'timeout'
        ? `timed out after ${options.timeoutMs} ms`
        : caught instanceof Error
          ? caught.message
          : String(caught);
  }
  const durationMs = Math.round(performance.now() - started);

  return db.transaction(async (tx) => {
    // The organization's claim lock first (as a claim takes it), then the endpoint's row before its
    // delivery's, the order every writer keeps (deleting an endpoint locks it, then its deliveries by
    // cascade); the other order deadlocks with a delete.
    await repo.lockDeliveryOrganization(tx, delivery.uid);
    const current = await repo.findEndpoint(tx, endpoint.organizationUid, endpoint.uid, {
      forNoKeyUpdate: true,
    });
    // Deleted while the request was out: nothing is left to record.
    if (!current) return 'skipped';
    const settled = {
      lastResponseStatus: status,
      lastDurationMs: durationMs,
      lastResponseExcerpt: excerpt,
      leasedUntil: null,
    };
    if (error === null) {
      await repo.settleDelivery(tx, delivery.organizationUid, delivery.uid, {
        ...settled,
        status: 'succeeded',
        lastError: null,
      });
      await repo.updateEndpoint(tx, endpoint.organizationUid, endpoint.uid, {
        failingSince: null,
        consecutiveFailures: 0,
        lastSuccessAt: now,
      });
      await releaseNextOfEntity(tx, options.jobs, delivery);
      await releaseNextUnderCaps(tx, options, delivery, now);
      return 'succeeded';
    }
    const next = nextAttemptAfter(delivery.attempts, delivery.firstAttemptAt ?? now, now);
    await repo.settleDelivery(tx, delivery.organizationUid, delivery.uid, {
      ...settled,
      lastError: error.slice(0, RESPONSE_EXCERPT_CHARS),
      ...(next ? { status: 'failed', nextAttemptAt: next } : { status: 'abandoned' }),
    });
    if (next) await enqueueDelivery(tx, options.jobs, delivery, next);
    else await releaseNextOfEntity(tx, options.jobs, delivery);
    await releaseNextUnderCaps(tx, options, delivery, now);
    await noteEndpointFailure(
      tx,
      options.jobs,
      endpoint,
      error,
      now,
      next ? null : (delivery.firstAttemptAt ?? now),
    );
    return next ? 'failed' : 'abandoned';
  });
}

/** Once a delivery is settled, the next one of its entity may go (per-entity order). */
async function releaseNextOfEntity(tx: DbOrTx, jobs: Jobs, delivery: repo.DeliveryRow): Promise<void> {
  const next = await repo.nextOfEntity(tx, delivery);
  if (next) await enqueueDelivery(tx, jobs, next);
}

/**
 * An attempt settled frees a slot of its endpoint and organization: the organization's oldest delivery
 * that can go now (one a claim passed over while the caps were full) is enqueued for it.
 */
async function releaseNextUnderCaps(
  tx: DbOrTx,
  options: WebhookOptions,
  delivery: repo.DeliveryRow,
  now: Date,
): Promise<void> {
  const next = await repo.nextUnderCaps(tx, delivery.organizationUid, now, options.caps);
  if (next) await enqueueDelivery(tx, options.jobs, next);
}

/**
 * An endpoint is disabled once every attempt has failed for 3 days: no success since `failing_since`
 * for that long, or a delivery abandoned (3 days of retries) with no success since its first attempt.
 * The reason is stored, the audit log records it (`webhook_endpoint.disabled`, by the system), and a
 * job enqueued in the same transaction emails the organization's admins (`sendDisabledNotice`): the
 * notice exists exactly when the disabling commits, and no mail goes out while it is open. Its pending
 * deliveries stay pending and go again once an admin enables it.
 */
async function noteEndpointFailure(
  tx: DbOrTx,
  jobs: Jobs,
  endpoint: repo.EndpointRow,
  error: string,
  now: Date,
  abandonedFirstAttemptAt: Date | null,
) {
  const row = await repo.noteEndpointFailure(tx, endpoint.organizationUid, endpoint.uid, now);
  if (!row || !row.enabled || !row.failingSince) return;
  const failingLongEnough = now.getTime() - row.failingSince.getTime() >= DISABLE_AFTER_MS;
  const abandonedWithoutSuccess =
    abandonedFirstAttemptAt !== null && row.failingSince.getTime() <= abandonedFirstAttemptAt.getTime();
  if (!failingLongEnough && !abandonedWithoutSuccess) return;
  const reason =
    `Disabled automatically: every delivery attempt failed since ${row.failingSince.toISOString()} ` +
    `(${row.consecutiveFailures} in a row; the last: ${error.slice(0, 200)})`;
  await repo.updateEndpoint(tx, endpoint.organizationUid, endpoint.uid, {
    enabled: false,
    disabledReason: reason,
  });
  const origin: AuditOrigin = jobOrigin(null);
  await recordAuditEvent(tx, origin, {
    organizationUid: endpoint.organizationUid,
    action: 'webhook_endpoint.disabled',
    entityUid: endpoint.uid,
    changes: {
      enabled: { before: true, after: false },
      disabled_reason: { before: null, after: reason },
    },
  });
  await jobs.enqueue<DisabledNoticeJobData>(tx, WEBHOOK_DISABLED_NOTICE_QUEUE, {
    organization_uid: endpoint.organizationUid,
    endpoint_uid: endpoint.uid,
    reason,
  });
}

export const WEBHOOK_DISABLED_NOTICE_QUEUE = 'remit.webhooks.disabled_notice';
export interface DisabledNoticeJobData {
  organization_uid: string;
  endpoint_uid: string;
  /** Why, as stored when it was disabled (the endpoint's `disabled_reason` then). */
  reason: string;
}

export interface NoticeDeps {
  db: Db;
  config: Pick<Config, 'mailFrom' | 'publicBaseUrl'>;
  mail: MailTransports;
}

/** The endpoint's address for people: scheme, host and path; a query string may carry a token. */
function endpointAddress(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}${parsed.search ? ' (query string not shown)' : ''}`;
}

/**
 * The notice job: one email to each admin of the organization (Remit's own mail, `MAIL_FROM` through
 * the operator's SMTP server or the outbox) naming the endpoint, why it was disabled and how to enable
 * it again. Nothing is sent when the endpoint was deleted or enabled again meanwhile. A failed send
 * throws, for the job's retry (which writes to every admin again). Returns how many were written to.
 */
export async function sendDisabledNotice(deps: NoticeDeps, data: DisabledNoticeJobData): Promise<number> {
  const endpoint = await repo.findEndpoint(deps.db, data.organization_uid, data.endpoint_uid);
  if (!endpoint || endpoint.enabled) return 0;
  const organization = await findOrganization(deps.db, data.organization_uid);
  const admins = await listAdminContacts(deps.db, data.organization_uid);
  const base = deps.config.publicBaseUrl;
  const path = `/api/organization/${endpoint.organizationUid}/webhook-endpoints/${endpoint.uid}`;
  const name = endpoint.description || new URL(endpoint.url).host;
  const text = [
    `A webhook endpoint of ${organization?.name ?? 'your organization'} was disabled automatically, ` +
      'because every delivery to it failed for too long.',
    '',
    `Endpoint: ${endpoint.uid}`,
    `Address: ${endpointAddress(endpoint.url)}`,
    ...(endpoint.description ? [`Description: ${endpoint.description}`] : []),
    `Reason: ${data.reason}`,
    '',
    'Events are still recorded (GET /api/events lists them); the deliveries to this endpoint wait until',
    'it is enabled again, then go in order.',
    '',
    'Once the endpoint answers again, an admin enables it with:',
    `  curl -X PATCH '${base}${path}' \\`,
    "    -H 'Authorization: Bearer <an admin API key>' -H 'Content-Type: application/json' \\",
    `    -d '{"enabled": true}'`,
    '',
    `Its delivery log (status, answer and error of every attempt): GET ${base}${path}/deliveries`,
    'See docs/webhooks.md#disabling.',
  ].join('\n');
  for (const admin of admins) {
    await sendSystemMail(
      { config: deps.config, mail: deps.mail },
      { to: admin.email, subject: `Remit: webhook endpoint disabled (${name})`, text },
    );
  }
  return admins.length;
}

/**
 * The sweep: every delivery that can go now (a retry whose job was lost, one left by a killed worker
 * once its lease ran out, one released by an earlier one of its entity), attempted one after another
 * until none is left. Returns what happened to each.
 */
export async function deliverDueWebhooks(
  db: Db,
  options: WebhookOptions,
  now = new Date(),
  limit = 100,
): Promise<Record<DeliveryOutcome, number>> {
  const counts: Record<DeliveryOutcome, number> = { skipped: 0, succeeded: 0, failed: 0, abandoned: 0 };
  for (let pass = 0; pass < 10; pass += 1) {
    const due = await repo.dueDeliveries(db, now, limit);
    if (due.length === 0) break;
    let progressed = false;
    for (const { uid } of due) {
      const outcome = await deliverWebhook(db, options, uid, now);
      counts[outcome] += 1;
      if (outcome !== 'skipped') progressed = true;
    }
    if (!progressed) break;
  }
  return counts;
}

/** Retention: events past 30 days, with their deliveries. */
export async function purgeOldEvents(db: Db, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - EVENT_RETENTION_MS);
  let total = 0;
  for (;;) {
    const deleted = await repo.purgeEventsBefore(db, before, 1000);
    total += deleted;
    if (deleted < 1000) return total;
  }
}

/**
 * Seals every endpoint secret that is plaintext or under a key that is no longer the current one
 * (`remit secrets rotate`). Returns how many values were sealed again.
 */
export async function resealWebhookSecrets(db: Db, secrets: SecretBox): Promise<number> {
  let count = 0;
  for (const row of await repo.listEndpointSecretsOfAllOrganizations(db)) {
    const secret = secrets.resealed(row.secret, secretPurpose(row.uid));
    const previous = row.previousSecret
      ? secrets.resealed(row.previousSecret, previousSecretPurpose(row.uid))
      : undefined;
    if (secret === undefined && previous === undefined) continue;
    count += await repo.replaceEndpointSecrets(db, row, {
      ...(secret !== undefined ? { secret } : {}),
      ...(previous !== undefined ? { previousSecret: previous } : {}),
    });
  }
  return count;
}
