import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Signed Slack requests already answered (migration 0027): a replay inside the window is refused. */
export const slackRequestReplays = pgTable(
  'slack_request_replays',
  {
    signatureHash: text('signature_hash').primaryKey(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('slack_request_replays_received_idx').on(t.receivedAt)],
);
