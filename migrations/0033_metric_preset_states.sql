-- Preset receivables metrics when they are needed (issue 22 point 6; docs/metrics.md): one row per
-- organization. `refresh_requested_at` is set by the first invoice or payment change after the last
-- refresh (in the change's transaction, together with the refresh job) and cleared by that job, so a
-- burst of changes makes one recompute. `computed_through` is the last day the daily job computed
-- after it had ended: the next run fills every day after it (the backfill). Tenant data under the
-- row-level-security policy of 0011 and its default grants.
CREATE TABLE "metric_preset_states" (
	"organization_uid" uuid PRIMARY KEY NOT NULL REFERENCES "organizations"("uid") ON DELETE CASCADE,
	"refresh_requested_at" timestamp with time zone,
	"computed_through" date,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "metric_preset_states" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "metric_preset_states"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
