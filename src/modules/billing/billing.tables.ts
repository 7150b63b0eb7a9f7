import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

/** Per-organization billing partner (CONTRACT §4/§6); the secret signs every sync request. */
export const billingIntegrations = pgTable('billing_integrations', {
  organizationUid: uuid('organization_uid')
    .primaryKey()
    .references(() => organizations.uid),
  type: text('type', { enum: ['http'] }).notNull(),
  url: text('url').notNull(),
  secret: text('secret').notNull(),
  ...timestamps,
});

/**
 * What we are about to tell the partner, committed before the call. If the partner accepted but our
 * own commit then failed, the reconciler finds the intent unconfirmed and re-sends the committed state.
 */
export const billingSyncIntents = pgTable(
  'billing_sync_intents',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid').notNull(),
    revision: integer('revision').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    /**
     * `in_progress` while its partner call runs (an update of the invoice meanwhile is 409
     * `sync_in_progress`); `pending` when the partner may hold a state we did not commit (the reconciler
     * re-sends ours); `confirmed` once the partner holds what we committed; `abandoned` when nothing
     * reached it or there is nothing left to repair.
     */
    state: text('state', { enum: ['in_progress', 'pending', 'confirmed', 'abandoned'] })
      .notNull()
      .default('pending'),
    /** The invoice revision the update was prepared from: it applies only if the invoice is still there. */
    baseRevision: integer('base_revision'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    ...timestamps,
  },
  (t) => [
    index('billing_sync_intents_pending_idx').on(t.state, t.createdAt),
    index('billing_sync_intents_invoice_idx').on(t.organizationUid, t.invoiceUid, t.revision),
    index('billing_sync_intents_in_progress_idx')
      .on(t.organizationUid, t.invoiceUid)
      .where(sql`${t.state} = 'in_progress'`),
  ],
);
