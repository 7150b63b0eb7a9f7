import { sql } from 'drizzle-orm';
import { bigint, check, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * The audit log (docs/audit-log.md): one row per change, written in the change's own transaction.
 * Requests may only insert and read it (migration 0012 revokes UPDATE and DELETE from the tenant role,
 * and a trigger refuses every UPDATE); the retention job deletes old rows as the owner.
 */
export const auditEvents = pgTable(
  'audit_events',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    /** Insertion order: the tie-break between events of one transaction, which share `occurred_at`. */
    id: bigint('id', { mode: 'number' }).generatedAlwaysAsIdentity().notNull(),
    organizationUid: uuid('organization_uid').notNull(),
    /**
     * The change's transaction time, to the millisecond: what the API shows (JSON has milliseconds) is
     * exactly what `from` and `to` compare, so an event's own time as a bound finds it.
     */
    occurredAt: timestamp('occurred_at', { withTimezone: true })
      .notNull()
      .default(sql`date_trunc('milliseconds', now())`),
    actorType: text('actor_type', { enum: ['user', 'api_key', 'agent_run', 'system'] }).notNull(),
    actorUid: uuid('actor_uid'),
    actorUserUid: uuid('actor_user_uid'),
    action: text('action').notNull(),
    entityType: text('entity_type').notNull(),
    entityUid: uuid('entity_uid').notNull(),
    /** What the entity belongs to (a line item's or payment's invoice): its history includes it. */
    parentEntityType: text('parent_entity_type'),
    parentEntityUid: uuid('parent_entity_uid'),
    /** `{field: {before, after}}`; secrets are never written (audit-changes.ts). */
    changes: jsonb('changes').notNull().default({}),
    requestId: text('request_id'),
    clientAddress: text('client_address'),
  },
  (t) => {
    // Every list is newest first within one organization: each filter has its own index in that order,
    // so a page is an index range read whatever the filter.
    const newest = () => [t.occurredAt.desc(), t.id.desc()] as const;
    return [
      check(
        'audit_events_actor_type_check',
        sql`${t.actorType} in ('user', 'api_key', 'agent_run', 'system')`,
      ),
      index('audit_events_org_occurred_idx').on(t.organizationUid, ...newest()),
      index('audit_events_org_entity_idx').on(t.organizationUid, t.entityUid, ...newest()),
      index('audit_events_org_parent_idx')
        .on(t.organizationUid, t.parentEntityUid, ...newest())
        .where(sql`${t.parentEntityUid} is not null`),
      index('audit_events_org_entity_type_idx').on(t.organizationUid, t.entityType, ...newest()),
      index('audit_events_org_action_idx').on(t.organizationUid, t.action, ...newest()),
      index('audit_events_org_actor_type_idx').on(t.organizationUid, t.actorType, ...newest()),
      index('audit_events_org_actor_idx')
        .on(t.organizationUid, t.actorUid, ...newest())
        .where(sql`${t.actorUid} is not null`),
      index('audit_events_org_actor_user_idx')
        .on(t.organizationUid, t.actorUserUid, ...newest())
        .where(sql`${t.actorUserUid} is not null`),
      // The retention purge reads by age across organizations: a BRIN index, a few pages for an
      // append-only table, costs next to nothing on insert.
      index('audit_events_occurred_brin_idx').using('brin', t.occurredAt),
    ];
  },
);
