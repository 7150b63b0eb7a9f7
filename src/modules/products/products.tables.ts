import { sql } from 'drizzle-orm';
import { bigint, index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

/** The SKU catalog line items refer to (PRODUCT adds to the subtotal, DISCOUNT subtracts). */
export const products = pgTable(
  'products',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    sku: text('sku').notNull(),
    name: text('name').notNull(),
    contextType: text('context_type', { enum: ['PRODUCT', 'DISCOUNT'] }).notNull(),
    unitPrice: bigint('unit_price', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('products_org_sku_key').on(t.organizationUid, t.sku),
    index('products_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc()),
  ],
);
