import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

/** An organization's webhook endpoint (docs/webhooks.md); migration 0016. */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    /** Empty: every event type. */
    eventTypes: text('event_types')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    enabled: boolean('enabled').notNull().default(true),
    /** `whsec_…`, sealed with the secret box. */
    secret: text('secret').notNull(),
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    disabledReason: text('disabled_reason'),
    failingSince: timestamp('failing_since', { withTimezone: true }),
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    lastSuccessAt: timestamp('last_success_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [index('webhook_endpoints_org_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc())],
);

/** The outbox: one row per event, written in the transaction of the change; kept 30 days. */
export const events = pgTable(
  'events',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    id: bigint('id', { mode: 'number' }).generatedAlwaysAsIdentity(),
    organizationUid: uuid('organization_uid').notNull(),
    type: text('type').notNull(),
    entityType: text('entity_type').notNull(),
    entityUid: uuid('entity_uid').notNull(),
    payload: jsonb('payload').notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true })
      .notNull()
      .default(sql`date_trunc('milliseconds', now())`),
  },
  (t) => [
    index('events_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.id.desc()),
    index('events_created_idx').on(t.createdAt),
  ],
);

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'abandoned'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event to one endpoint: its attempts and the last answer. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    id: bigint('id', { mode: 'number' }).generatedAlwaysAsIdentity(),
    organizationUid: uuid('organization_uid').notNull(),
    endpointUid: uuid('endpoint_uid')
      .notNull()
      .references(() => webhookEndpoints.uid, { onDelete: 'cascade' }),
    eventUid: uuid('event_uid')
      .notNull()
      .references(() => events.uid, { onDelete: 'cascade' }),
    entityType: text('entity_type').notNull(),
    entityUid: uuid('entity_uid').notNull(),
    status: text('status', { enum: DELIVERY_STATUSES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    leasedUntil: timestamp('leased_until', { withTimezone: true }),
    firstAttemptAt: timestamp('first_attempt_at', { withTimezone: true }),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true }),
    lastResponseStatus: integer('last_response_status'),
    lastDurationMs: integer('last_duration_ms'),
    lastResponseExcerpt: text('last_response_excerpt'),
    lastError: text('last_error'),
    ...timestamps,
  },
  (t) => [
    index('webhook_deliveries_due_idx')
      .on(t.nextAttemptAt, t.id)
      .where(sql`${t.status} in ('pending', 'failed')`),
    index('webhook_deliveries_entity_idx')
      .on(t.endpointUid, t.entityType, t.entityUid, t.id)
      .where(sql`${t.status} in ('pending', 'failed')`),
    index('webhook_deliveries_endpoint_idx').on(
      t.organizationUid,
      t.endpointUid,
      t.createdAt.desc(),
      t.id.desc(),
    ),
    index('webhook_deliveries_event_idx').on(t.eventUid),
  ],
);
