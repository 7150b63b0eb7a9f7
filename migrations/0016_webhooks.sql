-- Outbound webhooks (issue 19, docs/webhooks.md). `events` is the outbox: a module's change writes its
-- event, and one pending delivery per matching enabled endpoint, in the change's own transaction; jobs
-- deliver them afterwards (no network call inside a transaction). Every table is tenant data, under the
-- row-level-security policy of 0011 and the default grants it set for new tables.
CREATE TABLE "webhook_endpoints" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL REFERENCES "organizations"("uid") ON DELETE CASCADE,
	"url" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	-- Empty: every event type.
	"event_types" text[] DEFAULT '{}'::text[] NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	-- `whsec_…`, sealed with the secret box (docs/security.md#secrets-at-rest).
	"secret" text NOT NULL,
	-- The secret before the last rotation, sealed, still signing until `previous_secret_expires_at`.
	"previous_secret" text,
	"previous_secret_expires_at" timestamp with time zone,
	"disabled_reason" text,
	-- Since when every attempt has failed (null after any success); 3 days of it disables the endpoint.
	"failing_since" timestamp with time zone,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"last_success_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "webhook_endpoints_org_idx" ON "webhook_endpoints" USING btree ("organization_uid","created_at" DESC,"uid" DESC);
--> statement-breakpoint
CREATE TABLE "events" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	-- The order events were written in (per entity, deliveries follow it).
	"id" bigint GENERATED ALWAYS AS IDENTITY (sequence name "events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"organization_uid" uuid NOT NULL,
	"type" text NOT NULL,
	"entity_type" text NOT NULL,
	"entity_uid" uuid NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT date_trunc('milliseconds', now()) NOT NULL
);
--> statement-breakpoint
CREATE INDEX "events_org_created_idx" ON "events" USING btree ("organization_uid","created_at" DESC,"id" DESC);
--> statement-breakpoint
CREATE INDEX "events_created_idx" ON "events" USING btree ("created_at");
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"id" bigint GENERATED ALWAYS AS IDENTITY (sequence name "webhook_deliveries_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"organization_uid" uuid NOT NULL,
	"endpoint_uid" uuid NOT NULL REFERENCES "webhook_endpoints"("uid") ON DELETE CASCADE,
	"event_uid" uuid NOT NULL REFERENCES "events"("uid") ON DELETE CASCADE,
	-- The event's entity, copied so the per-entity ordering check is one index probe.
	"entity_type" text NOT NULL,
	"entity_uid" uuid NOT NULL,
	-- pending: not tried yet; failed: the last attempt failed and another is due at next_attempt_at;
	-- succeeded; abandoned: still failing 3 days after the first attempt.
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	-- Set while a worker sends it: a worker killed mid-send leaves it pending, and the lease's end frees it.
	"leased_until" timestamp with time zone,
	"first_attempt_at" timestamp with time zone,
	"last_attempt_at" timestamp with time zone,
	"last_response_status" integer,
	"last_duration_ms" integer,
	"last_response_excerpt" text,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_deliveries_status_check" CHECK ("status" IN ('pending', 'succeeded', 'failed', 'abandoned'))
);
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("next_attempt_at","id") WHERE "status" IN ('pending', 'failed');
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_entity_idx" ON "webhook_deliveries" USING btree ("endpoint_uid","entity_type","entity_uid","id") WHERE "status" IN ('pending', 'failed');
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" USING btree ("organization_uid","endpoint_uid","created_at" DESC,"id" DESC);
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" USING btree ("event_uid");
--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "webhook_endpoints"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
ALTER TABLE "events" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "events"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "webhook_deliveries"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
