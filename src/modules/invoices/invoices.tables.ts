import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';
import { parties } from '../parties/parties.tables.ts';

const cents = (name: string) => bigint(name, { mode: 'number' }).notNull().default(0);
const at = (name: string) => timestamp(name, { withTimezone: true });

export const invoices = pgTable(
  'invoices',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    invoiceType: text('invoice_type', { enum: ['ACCOUNTS_RECEIVABLE', 'ACCOUNTS_PAYABLE'] }).notNull(),
    invoiceNumber: text('invoice_number').notNull(),
    status: text('status').notNull(),
    collectionMethod: text('collection_method', { enum: ['charge_automatically', 'send_invoice'] })
      .notNull()
      .default('send_invoice'),
    currency: text('currency').notNull(),
    issueDate: at('issue_date'),
    dueDate: at('due_date'),
    paidDate: at('paid_date'),
    // Derived money (CONTRACT §4), recomputed in the same transaction as every change to lines, tax or payments.
    subtotalCents: cents('subtotal_cents'),
    discountCents: cents('discount_cents'),
    taxCents: cents('tax_cents'),
    totalCents: cents('total_cents'),
    prePaymentCreditNotesCents: cents('pre_payment_credit_notes_cents'),
    amountDueCents: cents('amount_due_cents'),
    amountPaidCents: cents('amount_paid_cents'),
    amountRemainingCents: cents('amount_remaining_cents'),
    invoiceLink: text('invoice_link'),
    documentUid: uuid('document_uid'),
    invoiceBlueprintUid: uuid('invoice_blueprint_uid'),
    targetPartyUid: uuid('target_party_uid'),
    clientPartyUid: uuid('client_party_uid').references(() => parties.uid),
    serviceProviderPartyUid: uuid('service_provider_party_uid').references(() => parties.uid),
    // Copies of the parties' names (and the vendor's tax id) so lists sort and search on an index;
    // kept in step when a party is renamed.
    clientName: text('client_name').notNull().default(''),
    vendorName: text('vendor_name').notNull().default(''),
    vendorNit: text('vendor_nit').notNull().default(''),
    hasComments: boolean('has_comments').notNull().default(false),
    invoiceMemo: text('invoice_memo').notNull().default(''),
    invoiceFooter: text('invoice_footer').notNull().default(''),
    /** `{key: {type, original_type, value}}`; served as an array of `{key, value}`. */
    invoiceFields: jsonb('invoice_fields').notNull().default({}),
    stampNumber: text('stamp_number'),
    receivedDate: at('received_date'),
    documentType: text('document_type'),
    registrationNumber: text('registration_number'),
    approvedBy: integer('approved_by'),
    approvalDate: at('approval_date'),
    registeredBy: integer('registered_by'),
    registrationDate: at('registration_date'),
    /** Integer id of the user responsible for the next action. */
    responsible: integer('responsible'),
    /** The user who entered the invoice (null before migration 0009); segregation of duties reads it. */
    enteredByUserUid: uuid('entered_by_user_uid'),
    /** Bumped on every change; with the uid it forms the billing sync idempotency key. */
    revision: integer('revision').notNull().default(1),
    ...timestamps,
  },
  (t) => {
    const base = [t.organizationUid, t.invoiceType] as const;
    return [
      // Receivable numbers are ours and unique; payable numbers are the vendors' and may repeat.
      uniqueIndex('invoices_org_ar_number_key')
        .on(t.organizationUid, t.invoiceNumber)
        .where(sql`${t.invoiceType} = 'ACCOUNTS_RECEIVABLE'`),
      index('invoices_org_type_number_idx').on(...base, t.invoiceNumber, t.uid),
      index('invoices_org_type_issue_idx').on(...base, t.issueDate, t.uid),
      index('invoices_org_type_due_idx').on(...base, t.dueDate, t.uid),
      index('invoices_org_type_status_due_idx').on(...base, t.status, t.dueDate, t.uid),
      index('invoices_org_type_status_issue_idx').on(...base, t.status, t.issueDate, t.uid),
      index('invoices_org_type_status_idx').on(...base, t.status, t.uid),
      index('invoices_org_type_vendor_name_idx').on(...base, t.vendorName, t.uid),
      index('invoices_org_type_vendor_nit_idx').on(...base, t.vendorNit, t.uid),
      index('invoices_org_type_amount_due_idx').on(...base, t.amountDueCents, t.uid),
      index('invoices_org_type_received_idx').on(...base, t.receivedDate, t.uid),
      index('invoices_org_type_document_type_idx').on(...base, t.documentType, t.uid),
      index('invoices_org_type_stamp_idx').on(...base, t.stampNumber, t.uid),
      index('invoices_org_type_approved_by_idx').on(...base, t.approvedBy, t.uid),
      index('invoices_org_type_approval_date_idx').on(...base, t.approvalDate, t.uid),
      index('invoices_org_type_registered_by_idx').on(...base, t.registeredBy, t.uid),
      index('invoices_org_type_registration_date_idx').on(...base, t.registrationDate, t.uid),
      index('invoices_org_type_registration_number_idx').on(...base, t.registrationNumber, t.uid),
      index('invoices_org_type_has_comments_idx').on(...base, t.hasComments, t.uid),
      index('invoices_org_type_responsible_idx').on(...base, t.responsible, t.uid),
      index('invoices_org_issue_idx').on(t.organizationUid, t.issueDate.desc(), t.uid.desc()),
      index('invoices_number_trgm_idx').using('gin', sql`${t.invoiceNumber} gin_trgm_ops`),
      index('invoices_client_name_trgm_idx').using('gin', sql`${t.clientName} gin_trgm_ops`),
      index('invoices_vendor_name_trgm_idx').using('gin', sql`${t.vendorName} gin_trgm_ops`),
      // Search matches the total as a decimal ("1250.00"); the same expression as search.repository.ts.
      index('invoices_total_text_trgm_idx').using(
        'gin',
        sql`(((${t.totalCents} / 100)::text || '.' || lpad((abs(${t.totalCents}) % 100)::text, 2, '0'))) gin_trgm_ops`,
      ),
      index('invoices_client_party_idx').on(t.organizationUid, t.clientPartyUid),
      index('invoices_provider_party_idx').on(t.organizationUid, t.serviceProviderPartyUid),
    ];
  },
);

export const invoiceAssignees = pgTable(
  'invoice_assignees',
  {
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    userUid: uuid('user_uid').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationUid, t.invoiceUid, t.userUid] }),
    index('invoice_assignees_user_idx').on(t.organizationUid, t.userUid, t.invoiceUid),
  ],
);

export const invoiceLineItems = pgTable(
  'invoice_line_items',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    contextTypeUid: uuid('context_type_uid').notNull(),
    contextType: text('context_type', { enum: ['PRODUCT', 'DISCOUNT'] }).notNull(),
    contextName: text('context_name').notNull(),
    sku: text('sku').notNull(),
    currency: text('currency').notNull(),
    quantity: integer('quantity').notNull(),
    unitPrice: bigint('unit_price', { mode: 'number' }).notNull(),
    lineTotal: bigint('line_total', { mode: 'number' }).notNull(),
    /** Order on the invoice: lines are listed as they were added (a batch in the order sent). */
    position: integer('position').notNull().default(0),
    ...timestamps,
  },
  (t) => [index('invoice_line_items_invoice_idx').on(t.organizationUid, t.invoiceUid, t.position, t.uid)],
);

export const invoiceComments = pgTable(
  'invoice_comments',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    authorUserUid: uuid('author_user_uid').notNull(),
    text: text('text').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastModifiedAt: timestamp('last_modified_at', { withTimezone: true }).notNull().defaultNow(),
    resolvedBy: integer('resolved_by'),
    resolvedAt: timestamp('resolved_at', { withTimezone: true }),
  },
  (t) => [index('invoice_comments_invoice_idx').on(t.organizationUid, t.invoiceUid, t.createdAt, t.uid)],
);

export const invoicePayments = pgTable(
  'invoice_payments',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    paidAt: timestamp('paid_at', { withTimezone: true }).notNull(),
    createdByUserUid: uuid('created_by_user_uid').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    // Refunds and voids (migration 0030, docs/invoices.md#payments-refunds-and-credit-notes): what
    // counts as paid is amount − refunded of the payments not voided.
    status: text('status', {
      enum: ['succeeded', 'partially_refunded', 'refunded', 'voided'],
    })
      .notNull()
      .default('succeeded'),
    amountRefundedCents: bigint('amount_refunded_cents', { mode: 'number' }).notNull().default(0),
    voidedAt: timestamp('voided_at', { withTimezone: true }),
    voidedByUserUid: uuid('voided_by_user_uid'),
    voidReason: text('void_reason'),
  },
  (t) => [
    index('invoice_payments_invoice_idx').on(t.organizationUid, t.invoiceUid, t.paidAt),
    index('invoice_payments_org_paid_idx').on(t.organizationUid, t.paidAt.desc(), t.uid.desc()),
  ],
);

export const invoiceAttachments = pgTable(
  'invoice_attachments',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    filename: text('filename').notNull(),
    contentType: text('content_type').notNull(),
    fileSize: bigint('file_size', { mode: 'number' }).notNull(),
    storageKey: text('storage_key').notNull(),
    uploadedBy: integer('uploaded_by').notNull(),
    description: text('description').notNull().default(''),
    isPublic: boolean('is_public').notNull().default(false),
    createdOn: timestamp('created_on', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('invoice_attachments_invoice_idx').on(
      t.organizationUid,
      t.invoiceUid,
      t.createdOn.desc(),
      t.uid.desc(),
    ),
  ],
);

/** The invoice's record at an outside system (interface 2.11 `integrations[]`). */
export const invoiceIntegrations = pgTable(
  'invoice_integrations',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    entityUid: uuid('entity_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    integrationName: text('integration_name').notNull(),
    integrationUid: text('integration_uid'),
    integrationMetadata: jsonb('integration_metadata').notNull().default({}),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('invoice_integrations_entity_name_key').on(t.organizationUid, t.entityUid, t.integrationName),
  ],
);

/**
 * Exact invoice counts per (organization, type, status), kept by triggers (migration 0003), so a list's
 * `total_items` without text or date filters is a handful of row reads instead of a count over millions.
 */
export const invoiceCounts = pgTable(
  'invoice_counts',
  {
    organizationUid: uuid('organization_uid').notNull(),
    invoiceType: text('invoice_type').notNull(),
    status: text('status').notNull(),
    n: bigint('n', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.organizationUid, t.invoiceType, t.status] })],
);

/** Every status change of an invoice (migration 0028; docs/invoices.md#status-history). */
export const invoiceStatusHistory = pgTable(
  'invoice_status_history',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid, { onDelete: 'cascade' }),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    /** 1, 2, … per invoice, in the order of the changes (written under the invoice's row lock). */
    position: integer('position').notNull(),
    fromStatus: text('from_status'),
    toStatus: text('to_status').notNull(),
    reason: text('reason').notNull(),
    note: text('note'),
    actorType: text('actor_type', { enum: ['user', 'api_key', 'agent_run', 'system'] }).notNull(),
    actorUid: uuid('actor_uid'),
    actorUserUid: uuid('actor_user_uid'),
    actorName: text('actor_name'),
    changedAt: at('changed_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('invoice_status_history_invoice_key').on(t.organizationUid, t.invoiceUid, t.position)],
);
