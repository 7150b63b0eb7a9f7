import { sql } from 'drizzle-orm';
import { index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';
import { parties } from '../parties/parties.tables.ts';

export const CONVERSATION_CHANNELS = ['email', 'chat', 'sms', 'phone'] as const;
export const CONVERSATION_STATUSES = ['open', 'pending', 'closed'] as const;

/** Conversations with a party (CONTRACT §4): threads of messages on one channel. */
export const conversations = pgTable(
  'conversations',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    subject: text('subject').notNull().default(''),
    channel: text('channel', { enum: CONVERSATION_CHANNELS }).notNull(),
    status: text('status', { enum: CONVERSATION_STATUSES }).notNull().default('open'),
    partyUid: uuid('party_uid').references(() => parties.uid),
    ...timestamps,
  },
  (t) => [
    index('conversations_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc()),
    index('conversations_subject_trgm_idx').using('gin', sql`${t.subject} gin_trgm_ops`),
    index('conversations_channel_trgm_idx').using('gin', sql`${t.channel} gin_trgm_ops`),
    index('conversations_status_trgm_idx').using('gin', sql`${t.status} gin_trgm_ops`),
  ],
);

export const messages = pgTable(
  'messages',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    conversationUid: uuid('conversation_uid')
      .notNull()
      .references(() => conversations.uid),
    direction: text('direction', { enum: ['inbound', 'outbound'] })
      .notNull()
      .default('outbound'),
    subject: text('subject').notNull().default(''),
    fromEmail: text('from_email').notNull().default(''),
    to: text('to_addresses')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    bodyText: text('body_text').notNull().default(''),
    /** RFC 5322 Message-ID (without angle brackets); inbound replies thread on it. */
    messageId: text('message_id'),
    inReplyTo: text('in_reply_to'),
    ...timestamps,
  },
  (t) => [
    index('messages_conversation_idx').on(t.organizationUid, t.conversationUid, t.createdAt),
    index('messages_message_id_idx').on(t.organizationUid, t.messageId),
    index('messages_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc()),
    index('messages_subject_trgm_idx').using('gin', sql`${t.subject} gin_trgm_ops`),
    index('messages_from_email_trgm_idx').using('gin', sql`${t.fromEmail} gin_trgm_ops`),
  ],
);
