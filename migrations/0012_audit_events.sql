-- The audit log (issue 18, docs/audit-log.md): one row per change, written in the same transaction as the
-- change. Tenant-scoped like every table with an organization_uid, but requests may only read and insert:
-- nothing that runs as remit_tenant can rewrite or remove an event, and no one can update one.
CREATE TABLE "audit_events" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"id" bigint GENERATED ALWAYS AS IDENTITY (sequence name "audit_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"organization_uid" uuid NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT date_trunc('milliseconds', now()) NOT NULL,
	"actor_type" text NOT NULL,
	"actor_uid" uuid,
	"actor_user_uid" uuid,
	"action" text NOT NULL,
	"entity_type" text NOT NULL,
	"entity_uid" uuid NOT NULL,
	"parent_entity_type" text,
	"parent_entity_uid" uuid,
	"changes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"request_id" text,
	"client_address" text,
	CONSTRAINT "audit_events_actor_type_check" CHECK ("actor_type" IN ('user', 'api_key', 'agent_run', 'system'))
);
--> statement-breakpoint
CREATE INDEX "audit_events_org_occurred_idx" ON "audit_events" USING btree ("organization_uid","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_events_org_entity_idx" ON "audit_events" USING btree ("organization_uid","entity_uid","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_events_org_parent_idx" ON "audit_events" USING btree ("organization_uid","parent_entity_uid","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "audit_events"."parent_entity_uid" is not null;--> statement-breakpoint
CREATE INDEX "audit_events_org_entity_type_idx" ON "audit_events" USING btree ("organization_uid","entity_type","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_events_org_action_idx" ON "audit_events" USING btree ("organization_uid","action","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_events_org_actor_type_idx" ON "audit_events" USING btree ("organization_uid","actor_type","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "audit_events_org_actor_idx" ON "audit_events" USING btree ("organization_uid","actor_uid","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "audit_events"."actor_uid" is not null;--> statement-breakpoint
CREATE INDEX "audit_events_org_actor_user_idx" ON "audit_events" USING btree ("organization_uid","actor_user_uid","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "audit_events"."actor_user_uid" is not null;--> statement-breakpoint
CREATE INDEX "audit_events_occurred_brin_idx" ON "audit_events" USING brin ("occurred_at");--> statement-breakpoint
ALTER TABLE "audit_events" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "audit_events"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
-- The default privileges of 0011 gave remit_tenant every right on new tables; on this one it keeps only
-- SELECT and INSERT, so a request (whatever its code does) cannot rewrite or delete an event.
REVOKE ALL ON "audit_events" FROM remit_tenant;
--> statement-breakpoint
GRANT SELECT, INSERT ON "audit_events" TO remit_tenant;
--> statement-breakpoint
-- Not even the owner updates an event: the retention job only deletes whole rows past their age.
CREATE FUNCTION remit_audit_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit events are never updated' USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_events_immutable BEFORE UPDATE ON "audit_events"
  FOR EACH ROW EXECUTE FUNCTION remit_audit_events_immutable();
