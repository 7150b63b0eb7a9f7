import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps, users } from '../tenancy/tenancy.tables.ts';

export const apiKeys = pgTable(
  'api_keys',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    userUid: uuid('user_uid')
      .notNull()
      .references(() => users.uid),
    name: text('name').notNull(),
    /** Hex SHA-256 (or HMAC-SHA-256 with the pepper) of the whole key; the plaintext is never stored. */
    keyHash: text('key_hash').notNull(),
    keyLast4: text('key_last4').notNull(),
    /** NULL means full access (bounded by the user's role). */
    scopes: text('scopes').array(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    createdByKeyUid: uuid('created_by_key_uid'),
    ...timestamps,
  },
  (t) => [
    // Authentication looks keys up by hash alone; under Citus this table is a reference table.
    uniqueIndex('api_keys_key_hash_key').on(t.keyHash),
    index('api_keys_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc()),
    // A member's keys in one organization (migration 0014): revoked together when they are removed.
    index('api_keys_org_user_idx').on(t.organizationUid, t.userUid),
  ],
);
