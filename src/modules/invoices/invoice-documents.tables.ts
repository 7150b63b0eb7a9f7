import { sql } from 'drizzle-orm';
import { integer, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations } from '../tenancy/tenancy.tables.ts';
import { invoices } from './invoices.tables.ts';

// Invoice documents (migration 0029, docs/invoices.md#invoice-documents). Both tables are tenant data,
// under the row-level-security policy every tenant table has.

const at = (name: string) => timestamp(name, { withTimezone: true });

/**
 * The latest rendered PDF of an invoice: its bytes in object storage under `storage_key`, made from
 * content whose SHA-256 is `content_hash`. A request whose content hashes the same is served these
 * bytes; any other renders again and replaces the row.
 */
export const invoiceDocuments = pgTable(
  'invoice_documents',
  {
    organizationUid: uuid('organization_uid').notNull(),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    contentHash: text('content_hash').notNull(),
    storageKey: text('storage_key').notNull(),
    byteSize: integer('byte_size').notNull(),
    renderedAt: at('rendered_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.organizationUid, t.invoiceUid] })],
);

/**
 * The links of hosted invoice pages: the token as its SHA-256 (the public page finds the link by it
 * alone) and sealed with the secret key (shown again to whoever may send it). At most one live link per
 * invoice; a revoked one stays as the record of who revoked it.
 */
export const hostedInvoiceLinks = pgTable(
  'hosted_invoice_links',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    invoiceUid: uuid('invoice_uid')
      .notNull()
      .references(() => invoices.uid, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    tokenSealed: text('token_sealed').notNull(),
    createdByUserUid: uuid('created_by_user_uid'),
    createdAt: at('created_at').notNull().defaultNow(),
    revokedAt: at('revoked_at'),
    revokedByUserUid: uuid('revoked_by_user_uid'),
    lastViewedAt: at('last_viewed_at'),
  },
  (t) => [
    uniqueIndex('hosted_invoice_links_token_hash_key').on(t.tokenHash),
    uniqueIndex('hosted_invoice_links_live_key')
      .on(t.organizationUid, t.invoiceUid)
      .where(sql`${t.revokedAt} IS NULL`),
  ],
);
