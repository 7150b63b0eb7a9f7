-- Runs of outside runtimes (issue 21, point 6; docs/agents.md#runs-of-outside-runtimes). A run of an agent
-- type with no built-in executor stays `pending` until a runtime claims it through the API: the claim
-- (a hash of its token, who holds it, when) and its lease live on the run; a lease that lapses puts the
-- run back to `pending` (counted in lease_lapses) or, after too many, fails it.
ALTER TABLE "agent_runs" ADD COLUMN "claim_token_hash" text;
--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "claimed_by" text;
--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "claimed_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "lease_seconds" integer;
--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "lease_expires_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "lease_lapses" integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- The work a runtime looks for (GET /api/agent-runs?status=pending, oldest first), and the runs the
-- hourly maintenance stops when no runtime claimed them.
CREATE INDEX "agent_runs_pending_idx" ON "agent_runs" USING btree ("organization_uid","created_on","uid") WHERE "status" = 'pending';
--> statement-breakpoint
-- The leases the minute's sweep takes back, across organizations.
CREATE INDEX "agent_runs_lease_idx" ON "agent_runs" USING btree ("lease_expires_at") WHERE "status" = 'running' AND "lease_expires_at" IS NOT NULL;
--> statement-breakpoint
-- The approval decision's webhook event is `approval.decided` (the issue's name); `work_task.approval_decided`
-- stays accepted as an alias and is stored under the new name (docs/webhooks.md#event-types). Existing
-- subscriptions and the events of the last 30 days are renamed, so a subscription, a delivery (its
-- retries and resends) and GET /api/events show one name.
UPDATE "webhook_endpoints" SET "event_types" = (
  SELECT array_agg(d.t ORDER BY d.t COLLATE "C")
  FROM (SELECT DISTINCT unnest(array_replace("event_types", 'work_task.approval_decided', 'approval.decided')) AS t) AS d
) WHERE 'work_task.approval_decided' = ANY ("event_types");
--> statement-breakpoint
UPDATE "events" SET "type" = 'approval.decided' WHERE "type" = 'work_task.approval_decided';
