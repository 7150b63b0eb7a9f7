import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

export const parties = pgTable(
  'parties',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    name: text('name').notNull(),
    role: text('role', { enum: ['client', 'vendor'] }).notNull(),
    address: text('address').notNull().default(''),
    taxId: text('tax_id'),
    /** Set while the party is archived (docs/invoices.md#archiving-a-party); its invoices keep it. */
    archivedAt: timestamp('archived_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    index('parties_org_role_updated_idx').on(t.organizationUid, t.role, t.updatedAt.desc(), t.uid.desc()),
    index('parties_org_updated_idx').on(t.organizationUid, t.updatedAt.desc(), t.uid.desc()),
    index('parties_org_active_updated_idx')
      .on(t.organizationUid, t.updatedAt.desc(), t.uid.desc())
      .where(sql`archived_at IS NULL`),
    index('parties_name_trgm_idx').using('gin', sql`${t.name} gin_trgm_ops`),
    index('parties_address_trgm_idx').using('gin', sql`${t.address} gin_trgm_ops`),
  ],
);

/** A party's billing contact (interface 2.11 `billing_contact`): one per party. */
export const partyContacts = pgTable(
  'party_contacts',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    partyUid: uuid('party_uid')
      .notNull()
      .references(() => parties.uid),
    name: text('name').notNull().default(''),
    title: text('title').notNull().default(''),
    email: text('email').notNull().default(''),
    phone: text('phone').notNull().default(''),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('party_contacts_party_key').on(t.organizationUid, t.partyUid),
    index('party_contacts_email_idx').on(t.organizationUid, sql`lower(${t.email})`),
  ],
);
