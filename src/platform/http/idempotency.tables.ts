import { integer, pgTable, primaryKey, text, timestamp, uuid, index } from 'drizzle-orm/pg-core';

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    organizationUid: uuid('organization_uid').notNull(),
    apiKeyUid: uuid('api_key_uid').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    requestHash: text('request_hash').notNull(),
    /** 'in_flight' until the first response is recorded, then 'done'. */
    state: text('state', { enum: ['in_flight', 'done'] }).notNull(),
    responseStatus: integer('response_status'),
    responseBody: text('response_body'),
    responseContentType: text('response_content_type'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationUid, t.apiKeyUid, t.method, t.path, t.idempotencyKey] }),
    index('idempotency_keys_expires_idx').on(t.expiresAt),
  ],
);
