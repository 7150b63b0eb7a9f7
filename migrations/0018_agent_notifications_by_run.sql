-- A run's notifications (GET /api/agents/{uid}/notifications?run_uid=…, the console's run timeline,
-- docs/agents.md#notifications): found by the run rather than by reading every notification of its
-- agent. Only rows that name a run (the digest names none).
CREATE INDEX "agent_notifications_run_idx" ON "agent_notifications" USING btree ("organization_uid","run_uid","created_at" DESC,"uid") WHERE "run_uid" IS NOT NULL;
