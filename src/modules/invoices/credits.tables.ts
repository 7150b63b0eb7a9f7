import { sql } from 'drizzle-orm';
import { bigint, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { invoicePayments, invoices } from './invoices.tables.ts';

/**
 * A refund of (part of) a payment: its own record, never an edit of the payment's amount, so the history
 * stays (migration 0030). The payment keeps the running `amount_refunded_cents` and its status.
 */
export const invoicePaymentRefunds = pgTable(
  'invoice_payment_refunds',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    paymentUid: uuid('payment_uid')
      .notNull()
      .references(() => invoicePayments.uid, { onDelete: 'cascade' }),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    reason: text('reason').notNull(),
    createdByUserUid: uuid('created_by_user_uid').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('invoice_payment_refunds_payment_idx').on(t.organizationUid, t.paymentUid, t.createdAt)],
);

/**
 * A credit note against an invoice before it is paid (Stripe's pre-payment credit note): the sum of the
 * issued ones is part of the invoice's `pre_payment_credit_notes_cents`. Voided, never deleted.
 */
export const invoiceCreditNotes = pgTable(
  'invoice_credit_notes',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    reason: text('reason', {
      enum: ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory', 'other'],
    }).notNull(),
    memo: text('memo').notNull().default(''),
    status: text('status', { enum: ['issued', 'void'] })
      .notNull()
      .default('issued'),
    createdByUserUid: uuid('created_by_user_uid').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    voidedAt: timestamp('voided_at', { withTimezone: true }),
    voidedByUserUid: uuid('voided_by_user_uid'),
    voidReason: text('void_reason'),
  },
  (t) => [index('invoice_credit_notes_invoice_idx').on(t.organizationUid, t.invoiceUid, t.createdAt)],
);
