-- Approval policies (issue 21 point 4; docs/approvals.md): who may decide an agent's approval, how many
-- distinct people must approve it, whether the person who started the run may, when it expires (fail
-- closed) and whom to tell when nobody has decided in time. A policy's rules are copied onto the task
-- when the approval is raised (`work_tasks.policy`), so editing or deleting a policy never changes a
-- pending task. Tenant data under the row-level-security policy of 0011 and its default grants.
CREATE TABLE "approval_policies" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL REFERENCES "organizations"("uid") ON DELETE CASCADE,
	"name" text NOT NULL,
	-- Null: every agent of the organization.
	"agent_uid" uuid REFERENCES "agents"("uid") ON DELETE CASCADE,
	-- Null: any tool; else it matches `tool_args.type`.
	"tool_type" text,
	-- Null: any amount; else it matches when the number at `tool_args.amount_cents` is at least this.
	"min_amount_cents" bigint,
	"approver_roles" text[] DEFAULT '{}'::text[] NOT NULL,
	"approver_user_uids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"required_approvals" integer DEFAULT 1 NOT NULL,
	"forbid_initiator" boolean DEFAULT false NOT NULL,
	"expires_after_minutes" integer,
	"escalate_after_minutes" integer,
	"escalate_to_user_uids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"escalate_to_chat_channel_id" text,
	"created_by_uid" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "approval_policies_required_check" CHECK ("required_approvals" BETWEEN 1 AND 5),
	CONSTRAINT "approval_policies_roles_check" CHECK ("approver_roles" <@ ARRAY['admin', 'member']::text[]),
	CONSTRAINT "approval_policies_approver_check" CHECK (cardinality("approver_roles") + cardinality("approver_user_uids") > 0),
	CONSTRAINT "approval_policies_expiry_check" CHECK ("expires_after_minutes" BETWEEN 1 AND 525600),
	CONSTRAINT "approval_policies_escalation_check" CHECK (
		"escalate_after_minutes" BETWEEN 1 AND 525600
		AND ("expires_after_minutes" IS NULL OR "escalate_after_minutes" < "expires_after_minutes")
	),
	CONSTRAINT "approval_policies_amount_check" CHECK ("min_amount_cents" >= 0)
);
--> statement-breakpoint
CREATE INDEX "approval_policies_org_idx" ON "approval_policies" USING btree ("organization_uid","created_at" DESC,"uid" DESC);
--> statement-breakpoint
ALTER TABLE "approval_policies" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "approval_policies"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
-- The rules an approval was raised under (null: none applied, today's behaviour), its deadlines, and
-- who started it (the person who asked for the run, or the user of the key that raised it).
ALTER TABLE "work_tasks" ADD COLUMN "policy" jsonb;
--> statement-breakpoint
ALTER TABLE "work_tasks" ADD COLUMN "initiator_user_uid" uuid;
--> statement-breakpoint
ALTER TABLE "work_tasks" ADD COLUMN "expires_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "work_tasks" ADD COLUMN "escalate_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "work_tasks" ADD COLUMN "escalated_at" timestamp with time zone;
--> statement-breakpoint
-- The two per-minute sweeps read only undecided approvals with a deadline: small partial indexes.
CREATE INDEX "work_tasks_expiry_idx" ON "work_tasks" USING btree ("expires_at") WHERE "resolution" IS NULL AND "expires_at" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX "work_tasks_escalation_idx" ON "work_tasks" USING btree ("escalate_at") WHERE "resolution" IS NULL AND "escalated_at" IS NULL AND "escalate_at" IS NOT NULL;
--> statement-breakpoint
-- One row per person who approved an approval still short of its count (and the deciding one):
-- the two-person rule counts distinct people, so (task, user) is the key.
CREATE TABLE "work_task_approvals" (
	"organization_uid" uuid NOT NULL,
	"task_uid" uuid NOT NULL REFERENCES "work_tasks"("uid"),
	"user_uid" uuid NOT NULL,
	"at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
	CONSTRAINT "work_task_approvals_pkey" PRIMARY KEY ("organization_uid","task_uid","user_uid")
);
--> statement-breakpoint
ALTER TABLE "work_task_approvals" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "work_task_approvals"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
