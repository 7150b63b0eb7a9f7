import { index, integer, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users } from '../tenancy/tenancy.tables.ts';
import { workTasks } from './work-tasks.tables.ts';

// Deciding approvals by email (migration 0023, docs/approval-emails.md). Both tables are tenant data,
// under the row-level-security policy every tenant table has.

export const APPROVAL_EMAIL_STATUSES = ['pending', 'sending', 'sent', 'skipped'] as const;
export type ApprovalEmailStatus = (typeof APPROVAL_EMAIL_STATUSES)[number];

const at = (name: string) => timestamp(name, { withTimezone: true });

/**
 * Who is to get an approval's email, written with the approval, and whether they got it: `pending`
 * (not yet), `sending` (a job took it: a job retried after a crash leaves it alone, so nobody is mailed
 * twice), `sent`, or `skipped` (decided before it went, or no longer a member).
 */
export const approvalEmailRecipients = pgTable(
  'approval_email_recipients',
  {
    organizationUid: uuid('organization_uid').notNull(),
    taskUid: uuid('task_uid')
      .notNull()
      .references(() => workTasks.uid, { onDelete: 'cascade' }),
    userUid: uuid('user_uid')
      .notNull()
      .references(() => users.uid, { onDelete: 'cascade' }),
    status: text('status', { enum: APPROVAL_EMAIL_STATUSES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    sentAt: at('sent_at'),
    createdAt: at('created_at').notNull().defaultNow(),
    updatedAt: at('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.organizationUid, t.taskUid, t.userUid] })],
);

/** The emailed links that decided: one row per link (`jti`), written in the decision's transaction. */
export const approvalLinkUses = pgTable(
  'approval_link_uses',
  {
    organizationUid: uuid('organization_uid').notNull(),
    jti: uuid('jti').notNull(),
    taskUid: uuid('task_uid')
      .notNull()
      .references(() => workTasks.uid, { onDelete: 'cascade' }),
    userUid: uuid('user_uid').notNull(),
    action: text('action', { enum: ['approve', 'reject'] }).notNull(),
    usedAt: at('used_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationUid, t.jti] }),
    index('approval_link_uses_task_idx').on(t.organizationUid, t.taskUid),
  ],
);
