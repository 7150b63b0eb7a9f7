import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps, users } from '../tenancy/tenancy.tables.ts';

/** Computed, never stored: accepted and revoked are final; an open invitation expires at `expires_at`. */
export const INVITATION_STATUSES = ['pending', 'accepted', 'revoked', 'expired'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

const at = (name: string) => timestamp(name, { withTimezone: true });

/**
 * Invitations to join an organization (migration 0014; docs/people.md#members-and-invitations). A tenant
 * table under row-level security. The emailed token is kept only as its SHA-256 (`token_hash`).
 */
export const invitations = pgTable(
  'invitations',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    /** Normalized (trimmed, lower case), as `users.email`. */
    email: text('email').notNull(),
    role: text('role', { enum: ['admin', 'member'] }).notNull(),
    tokenHash: text('token_hash').notNull(),
    invitedByUserUid: uuid('invited_by_user_uid').references(() => users.uid),
    expiresAt: at('expires_at').notNull(),
    acceptedAt: at('accepted_at'),
    acceptedByUserUid: uuid('accepted_by_user_uid').references(() => users.uid),
    revokedAt: at('revoked_at'),
    lastSentAt: at('last_sent_at').notNull().defaultNow(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('invitations_token_hash_key').on(t.tokenHash),
    // At most one open invitation per address and organization.
    uniqueIndex('invitations_open_email_key')
      .on(t.organizationUid, t.email)
      .where(sql`${t.acceptedAt} is null and ${t.revokedAt} is null`),
    index('invitations_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc()),
  ],
);
