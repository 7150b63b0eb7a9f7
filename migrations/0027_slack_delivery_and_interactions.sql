-- Slack as a place to work (issue 21, points 1 and 2; docs/slack.md). Every post is a durable job
-- now: a notification counts its attempts and knows when it is next tried (a 429's Retry-After, or
-- backoff); `attempt_started_at` marks a post under way, so a retry after a crash first looks in the
-- channel for the message that attempt may have posted (its metadata names the notification).
ALTER TABLE "agent_notifications" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE "agent_notifications" ADD COLUMN "next_attempt_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "agent_notifications" ADD COLUMN "attempt_started_at" timestamp with time zone;
--> statement-breakpoint
-- The sweep for posts nobody is working on (a process died between commit and its job, or before
-- this migration): only pending rows, which are few.
CREATE INDEX "agent_notifications_pending_idx" ON "agent_notifications" USING btree ("next_attempt_at", "created_at")
  WHERE "delivery_status" = 'pending';
--> statement-breakpoint
-- The approval messages of a task, to update them in place once it is decided.
CREATE INDEX "agent_notifications_task_idx" ON "agent_notifications" USING btree ("organization_uid", "task_uid")
  WHERE "task_uid" IS NOT NULL;
--> statement-breakpoint
-- Signed Slack requests already answered (by the SHA-256 of their signature), kept past Slack's
-- five-minute window: a replayed request is refused. Not tenant data (a request names no organization
-- until it is read): only the service's own role reads it.
CREATE TABLE "slack_request_replays" (
	"signature_hash" text PRIMARY KEY NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "slack_request_replays_received_idx" ON "slack_request_replays" USING btree ("received_at");
--> statement-breakpoint
REVOKE ALL ON "slack_request_replays" FROM remit_tenant;
