-- Invoice lifecycles (issue 22, point 1; docs/invoices.md#lifecycle). Every status change of an invoice
-- leaves a row here, in the transaction of the change: who (the audit actor: user, API key, agent run or
-- the service, with the person behind it and a display name), when, from (null at creation), to, why
-- (created, update, payment, or what an internal caller names) and an optional note. Written only by
-- the invoices service; tenant data under the row-level-security policy of 0011 and its default grants.
CREATE TABLE "invoice_status_history" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL REFERENCES "organizations"("uid") ON DELETE CASCADE,
	"invoice_uid" uuid NOT NULL REFERENCES "invoices"("uid") ON DELETE CASCADE,
	-- 1, 2, … per invoice, in the order of the changes (written under the invoice's row lock).
	"position" integer NOT NULL,
	"from_status" text,
	"to_status" text NOT NULL,
	"reason" text NOT NULL,
	"note" text,
	"actor_type" text NOT NULL,
	"actor_uid" uuid,
	"actor_user_uid" uuid,
	"actor_name" text,
	"changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "invoice_status_history_actor_type_check" CHECK ("actor_type" IN ('user', 'api_key', 'agent_run', 'system'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "invoice_status_history_invoice_key" ON "invoice_status_history" USING btree ("organization_uid","invoice_uid","position");
--> statement-breakpoint
ALTER TABLE "invoice_status_history" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "invoice_status_history"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
-- Approval amount limits (cents) per role and per user: `{"roles": {"admin": null, "member": 500000},
-- "users": [{"user_uid": "…", "limit_cents": 1000000}]}`; null: unlimited. The default: no limits.
ALTER TABLE "organizations" ADD COLUMN "approval_limits" jsonb DEFAULT '{"roles":{"admin":null,"member":null},"users":[]}'::jsonb NOT NULL;
