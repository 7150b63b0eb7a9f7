import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';
import { emailAccounts } from './email-accounts.tables.ts';

export const DRAFT_STATUSES = ['draft', 'sending', 'sent', 'failed', 'canceled'] as const;
export type DraftStatus = (typeof DRAFT_STATUSES)[number];

/** An attachment's bytes live in object storage; the draft keeps where, and what it is. */
export interface StoredAttachment {
  filename: string;
  content_type: string;
  size: number;
  storage_key: string;
}

const at = (name: string) => timestamp(name, { withTimezone: true });
const addresses = (name: string) =>
  text(name)
    .array()
    .notNull()
    .default(sql`'{}'::text[]`);

/** Outbound email records (interface 2.10): drafts, and what became of them. */
export const emailDrafts = pgTable(
  'email_drafts',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    fromAccountUid: uuid('from_account_uid')
      .notNull()
      .references(() => emailAccounts.uid),
    fromEmail: text('from_email').notNull(),
    to: addresses('to_addresses'),
    cc: addresses('cc_addresses'),
    bcc: addresses('bcc_addresses'),
    subject: text('subject').notNull().default(''),
    bodyText: text('body_text').notNull().default(''),
    bodyHtml: text('body_html').notNull().default(''),
    attachments: jsonb('attachments').$type<StoredAttachment[]>().notNull().default([]),
    contextType: text('context_type'),
    contextId: uuid('context_id'),
    plannedSendAt: at('planned_send_at'),
    status: text('status', { enum: DRAFT_STATUSES }).notNull().default('draft'),
    /** The pg-boss job that sends it at `planned_send_at` (cancelled when the time changes). */
    sendJobId: text('send_job_id'),
    // The send attempt, recorded before anything goes out (docs/email-sending.md, "no double send"):
    /** Fixed when sending starts and kept for every retry of that attempt. */
    messageId: text('message_id'),
    sendAttempts: integer('send_attempts').notNull().default(0),
    /** Which mailer the attempt used: `outbox` can be asked afterwards, `smtp` cannot. */
    transport: text('transport', { enum: ['outbox', 'smtp'] }),
    /** A `sending` row whose lease ran out belongs to an attempt that died; before, to a live one. */
    sendingLeaseUntil: at('sending_lease_until'),
    sentAt: at('sent_at'),
    error: text('error'),
    ...timestamps,
  },
  (t) => [
    // The sweep's two questions, across organizations: drafts due, and attempts that died.
    index('email_drafts_due_idx')
      .on(t.plannedSendAt)
      .where(sql`status = 'draft' and planned_send_at is not null`),
    index('email_drafts_sending_idx')
      .on(t.sendingLeaseUntil)
      .where(sql`status = 'sending'`),
    // The list (migration 0017): an organization's emails by their latest change, and an entity's emails.
    index('email_drafts_org_updated_idx').on(t.organizationUid, t.updatedAt.desc(), t.uid.desc()),
    index('email_drafts_org_context_idx').on(t.organizationUid, t.contextType, t.contextId),
  ],
);
