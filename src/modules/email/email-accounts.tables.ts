import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

/** The connected email accounts drafts are sent from (CONTRACT §4): one sender identity each. */
export const emailAccounts = pgTable(
  'email_accounts',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    email: text('email').notNull(),
    displayName: text('display_name').notNull().default(''),
    /** `smtp(s)://user:password@host:port`; never served (the view shows the host only). */
    smtpUrl: text('smtp_url'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('email_accounts_org_email_key').on(t.organizationUid, sql`lower(${t.email})`),
    index('email_accounts_org_created_idx').on(t.organizationUid, t.createdAt, t.uid),
  ],
);
