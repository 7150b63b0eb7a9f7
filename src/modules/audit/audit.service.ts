import type { Db, DbOrTx } from '../../platform/db/client.ts';
import {
  requirePermission,
  SYSTEM_ACTOR,
  type AuditActor,
  type RequestContext,
} from '../../platform/http/context.ts';
import { parseInstantRange } from '../../platform/http/date-range.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { changesBetween, hasChanges, type Changes, type ChangesOptions } from './audit-changes.ts';
import * as repo from './audit.repository.ts';

export { changesBetween, hasChanges, REDACTED, type Changes } from './audit-changes.ts';

/**
 * Every action the audit log records, `<entity type>.<what happened>` (docs/audit-log.md#actions).
 * The entity type of an event is its action's prefix.
 */
export const AUDIT_ACTIONS = [
  'invoice.created',
  'invoice.updated',
  'invoice.status_changed',
  'invoice.approved',
  'line_item.created',
  'line_item.updated',
  'payment.recorded',
  'hosted_invoice_link.created',
  'hosted_invoice_link.revoked',
  'payment.refunded',
  'payment.voided',
  'credit_note.created',
  'credit_note.voided',
  'party.created',
  'party.updated',
  'party.archived',
  'party.unarchived',
  'task.created',
  'task.updated',
  'task.decided',
  'task.policy_applied',
  'task.approval_recorded',
  'task.responded',
  'task.revised',
  'task.escalated',
  'task.expired',
  'agent.created',
  'agent.updated',
  'approval_policy.created',
  'approval_policy.updated',
  'approval_policy.deleted',
  'api_key.created',
  'api_key.revoked',
  'member.added',
  'member.role_changed',
  'member.removed',
  'invitation.created',
  'invitation.resent',
  'invitation.revoked',
  'invitation.accepted',
  'billing_integration.created',
  'billing_integration.updated',
  'billing_integration.deleted',
  'email_account.created',
  'email.created',
  'email.updated',
  'email.canceled',
  'email.sent',
  'email.failed',
  'organization.settings_changed',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.disabled',
  'knowledge_document.deleted',
  'attachment.deleted',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

type EntityTypeOf<A extends string> = A extends `${infer T}.${string}` ? T : never;
export type AuditEntityType = EntityTypeOf<AuditAction>;
export const AUDIT_ENTITY_TYPES = [
  ...new Set(AUDIT_ACTIONS.map((a) => a.slice(0, a.indexOf('.')))),
] as AuditEntityType[];

const entityTypeOf = (action: AuditAction) => action.slice(0, action.indexOf('.')) as AuditEntityType;

/**
 * Who made a change and from where. A request's `RequestContext` is one (its key or user, its request
 * id, its client address); a job makes its own with `jobOrigin`.
 */
export interface AuditOrigin {
  actor: AuditActor;
  requestId: string | null;
  clientAddress: string | null;
}

/** A job's origin: the system, or the actor that asked for the job (carried in its data). */
export function jobOrigin(job: { id: string } | null, actor: AuditActor = SYSTEM_ACTOR): AuditOrigin {
  return { actor, requestId: job ? `job:${job.id}` : null, clientAddress: null };
}

export interface AuditEvent {
  /** The organization of the entity (not necessarily the call's default one). */
  organizationUid: string;
  action: AuditAction;
  entityUid: string;
  /** What the entity belongs to (a line item's invoice); the parent's history shows the event too. */
  parent?: { type: AuditEntityType; uid: string } | undefined;
  changes?: Changes | undefined;
}

/**
 * Records one change. Call it with the transaction that makes the change, so the event exists exactly
 * when the change does (a rollback takes both). One INSERT; no read.
 */
export async function recordAuditEvent(tx: DbOrTx, origin: AuditOrigin, event: AuditEvent): Promise<void> {
  await recordAuditEvents(tx, origin, [event]);
}

/** Several events of one change (a batch of line items, a payment that settles its invoice): one INSERT. */
export async function recordAuditEvents(
  tx: DbOrTx,
  origin: AuditOrigin,
  events: readonly AuditEvent[],
): Promise<void> {
  await repo.insertEvents(
    tx,
    events.map((event) => ({
      organizationUid: event.organizationUid,
      actorType: origin.actor.type,
      actorUid: origin.actor.uid,
      actorUserUid: origin.actor.userUid,
      action: event.action,
      entityType: entityTypeOf(event.action),
      entityUid: event.entityUid,
      parentEntityType: event.parent?.type ?? null,
      parentEntityUid: event.parent?.uid ?? null,
      changes: event.changes ?? {},
      requestId: origin.requestId,
      clientAddress: origin.clientAddress,
    })),
  );
}

/**
 * An update's event, when it changed anything: `{field: {before, after}}` of the fields that differ
 * (rows or views; secrets redacted). Nothing is written for an update that changed nothing.
 */
export async function recordUpdate(
  tx: DbOrTx,
  origin: AuditOrigin,
  event: Omit<AuditEvent, 'changes'> & {
    before: object;
    after: object;
    options?: ChangesOptions;
  },
): Promise<Changes> {
  const changes = changesBetween(event.before, event.after, event.options);
  if (hasChanges(changes)) {
    await recordAuditEvent(tx, origin, {
      organizationUid: event.organizationUid,
      action: event.action,
      entityUid: event.entityUid,
      parent: event.parent,
      changes,
    });
  }
  return changes;
}

// ---- reading ----

export function toAuditEventView(row: repo.AuditEventRow) {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    occurred_at: row.occurredAt.toISOString(),
    actor_type: row.actorType,
    actor_uid: row.actorUid,
    actor_user_uid: row.actorUserUid,
    action: row.action,
    entity_type: row.entityType,
    entity_uid: row.entityUid,
    parent_entity_type: row.parentEntityType,
    parent_entity_uid: row.parentEntityUid,
    changes: row.changes as Changes,
    request_id: row.requestId,
    client_address: row.clientAddress,
  };
}
export type AuditEventView = ReturnType<typeof toAuditEventView>;

export interface AuditEventQuery {
  actor_type?: AuditActor['type'] | undefined;
  actor_uid?: string | undefined;
  actor_user_uid?: string | undefined;
  entity_type?: AuditEntityType | undefined;
  entity_uid?: string | undefined;
  action?: AuditAction | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

const DAY_MS = 86_400_000;

/**
 * `GET /api/organization/{uid}/audit-events`: admins only (the `audit:read` scope, which no member's
 * role holds). `from` and `to` are inclusive; a bare date as `to` includes that whole UTC day.
 */
export async function listAuditEvents(
  db: Db,
  ctx: RequestContext,
  query: AuditEventQuery,
  page: PageRequest,
) {
  requirePermission(ctx, 'audit:read');
  const { from, until, before } = parseInstantRange(query.from, query.to);
  const { rows, total } = await repo.listEvents(
    db,
    ctx.organizationUid,
    {
      actorType: query.actor_type,
      actorUid: query.actor_uid,
      actorUserUid: query.actor_user_uid,
      entityType: query.entity_type,
      entityUid: query.entity_uid,
      action: query.action,
      from,
      to: before ?? until,
      toExclusive: before !== undefined,
    },
    page.perPage,
    offsetOf(page),
  );
  return { items: rows.map(toAuditEventView), total };
}

// ---- retention ----

/** Events deleted per statement: bounded transactions, whatever the backlog. */
const PURGE_BATCH = 5000;

/**
 * Deletes the events older than `retentionDays` (0: keep forever) before `now`, in batches. Runs as the
 * owner (a job): the tenant role cannot delete events.
 */
export async function purgeExpiredAuditEvents(
  db: Db,
  retentionDays: number,
  now: Date = new Date(),
): Promise<number> {
  if (retentionDays <= 0) return 0;
  const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
  let deleted = 0;
  for (;;) {
    const batch = await repo.deleteEventsBefore(db, cutoff, PURGE_BATCH);
    deleted += batch;
    if (batch < PURGE_BATCH) return deleted;
  }
}
