-- Deciding approvals by email (issue 21, point 3; docs/approval-emails.md). A person opts in per
-- organization (memberships.approval_emails); raising an approval writes who is to be mailed
-- (approval_email_recipients) and a job mails them after commit; a link that decides is recorded by its
-- jti (approval_link_uses) in the decision's own transaction, so it decides once. The links themselves
-- are signed, not stored. Both new tables are tenant data, under the policy of 0011.
ALTER TABLE "memberships" ADD COLUMN "approval_emails" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
-- A person's own preference on the membership is nothing authentication reads: only who belongs where,
-- and as what, bumps users.auth_version (0005). Turning approval emails on or off then does not make
-- every process forget its cached principals (0015).
DROP TRIGGER memberships_auth_version ON memberships;
--> statement-breakpoint
CREATE TRIGGER memberships_auth_version
  AFTER INSERT OR DELETE OR UPDATE OF organization_uid, user_uid, role, is_default ON memberships
  FOR EACH ROW EXECUTE FUNCTION memberships_bump_auth_version();
--> statement-breakpoint
CREATE TABLE "approval_email_recipients" (
	"organization_uid" uuid NOT NULL,
	"task_uid" uuid NOT NULL REFERENCES "work_tasks"("uid") ON DELETE CASCADE,
	"user_uid" uuid NOT NULL REFERENCES "users"("uid") ON DELETE CASCADE,
	-- pending: not sent yet; sending: a job took it (a crash leaves it so: never mailed twice); sent;
	-- skipped: decided before it went, or the person is no longer a member.
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"sent_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "approval_email_recipients_pk" PRIMARY KEY ("organization_uid", "task_uid", "user_uid"),
	CONSTRAINT "approval_email_recipients_status_check" CHECK ("status" IN ('pending', 'sending', 'sent', 'skipped'))
);
--> statement-breakpoint
CREATE TABLE "approval_link_uses" (
	"organization_uid" uuid NOT NULL,
	"jti" uuid NOT NULL,
	"task_uid" uuid NOT NULL REFERENCES "work_tasks"("uid") ON DELETE CASCADE,
	"user_uid" uuid NOT NULL,
	"action" text NOT NULL,
	"used_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "approval_link_uses_pk" PRIMARY KEY ("organization_uid", "jti"),
	CONSTRAINT "approval_link_uses_action_check" CHECK ("action" IN ('approve', 'reject'))
);
--> statement-breakpoint
CREATE INDEX "approval_link_uses_task_idx" ON "approval_link_uses" USING btree ("organization_uid", "task_uid");
--> statement-breakpoint
ALTER TABLE "approval_email_recipients" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "approval_email_recipients"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
ALTER TABLE "approval_link_uses" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "approval_link_uses"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
