import { sql } from 'drizzle-orm';
import {
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

const timestamps = {
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
};

export const organizations = pgTable('organizations', {
  uid: uuid('uid')
    .primaryKey()
    .default(sql`gen_random_uuid()`),
  name: text('name').notNull(),
  /** When on, whoever entered a payable may not approve it (docs/authentication.md). */
  segregationOfDuties: boolean('segregation_of_duties').notNull().default(false),
  /** When on, an admin signs in to this organization only with a second factor (docs/people.md). */
  requireAdminMfa: boolean('require_admin_mfa').notNull().default(false),
  /** Where agents without a channel of their own post their notifications (docs/agents.md). */
  slackChannelId: text('slack_channel_id'),
  /** Approval amount limits per role and user, in cents (docs/invoices.md#approval-limits; migration 0028). */
  approvalLimits: jsonb('approval_limits')
    .notNull()
    .default({ roles: { admin: null, member: null }, users: [] }),
  /** What the PDF of a receivable shows of its issuer (docs/invoices.md#invoice-documents). */
  address: text('address').notNull().default(''),
  taxId: text('tax_id'),
  paymentInstructions: text('payment_instructions').notNull().default(''),
  /**
   * The PostgreSQL text search configuration its knowledge and documents are indexed and searched in
   * (SEARCH_LANGUAGES; migration 0032 re-indexes on change, docs/knowledge.md#full-text-search).
   */
  searchLanguage: text('search_language').notNull().default('english'),
  ...timestamps,
});

export const users = pgTable(
  'users',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    // Interface 2.11 and 2.13 expose integer user ids (comment actors, uploaders), so users carry both.
    id: integer('id').generatedAlwaysAsIdentity().notNull(),
    email: text('email').notNull(),
    fullName: text('full_name').notNull().default(''),
    avatarUrl: text('avatar_url'),
    /**
     * Bumped by triggers whenever the user's memberships (or an organization's name they show) change,
     * so authentication can reuse memberships it already read and still never serve stale ones.
     */
    authVersion: integer('auth_version').notNull().default(0),
    ...timestamps,
  },
  (t) => [uniqueIndex('users_id_key').on(t.id), uniqueIndex('users_email_key').on(t.email)],
);

export const memberships = pgTable(
  'memberships',
  {
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    userUid: uuid('user_uid')
      .notNull()
      .references(() => users.uid),
    role: text('role', { enum: ['admin', 'member'] }).notNull(),
    isDefault: boolean('is_default').notNull().default(false),
    /** The person wants approval requests of this organization by email (docs/approval-emails.md). */
    approvalEmails: boolean('approval_emails').notNull().default(false),
    ...timestamps,
  },
  (t) => [
    primaryKey({ columns: [t.organizationUid, t.userUid] }),
    index('memberships_user_idx').on(t.userUid),
    // A user has at most one default organization.
    uniqueIndex('memberships_one_default_per_user')
      .on(t.userUid)
      .where(sql`${t.isDefault}`),
  ],
);

export { timestamps };
