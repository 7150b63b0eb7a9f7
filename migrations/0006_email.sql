CREATE TABLE "email_accounts" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"email" text NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"smtp_url" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "email_drafts" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"from_account_uid" uuid NOT NULL,
	"from_email" text NOT NULL,
	"to_addresses" text[] DEFAULT '{}'::text[] NOT NULL,
	"cc_addresses" text[] DEFAULT '{}'::text[] NOT NULL,
	"bcc_addresses" text[] DEFAULT '{}'::text[] NOT NULL,
	"subject" text DEFAULT '' NOT NULL,
	"body_text" text DEFAULT '' NOT NULL,
	"body_html" text DEFAULT '' NOT NULL,
	"attachments" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"context_type" text,
	"context_id" uuid,
	"planned_send_at" timestamp with time zone,
	"status" text DEFAULT 'draft' NOT NULL,
	"send_job_id" text,
	"message_id" text,
	"send_attempts" integer DEFAULT 0 NOT NULL,
	"transport" text,
	"sending_lease_until" timestamp with time zone,
	"sent_at" timestamp with time zone,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "email_accounts" ADD CONSTRAINT "email_accounts_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_drafts" ADD CONSTRAINT "email_drafts_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_drafts" ADD CONSTRAINT "email_drafts_from_account_uid_email_accounts_uid_fk" FOREIGN KEY ("from_account_uid") REFERENCES "public"."email_accounts"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "email_accounts_org_email_key" ON "email_accounts" USING btree ("organization_uid",lower("email"));--> statement-breakpoint
CREATE INDEX "email_accounts_org_created_idx" ON "email_accounts" USING btree ("organization_uid","created_at","uid");--> statement-breakpoint
CREATE INDEX "email_drafts_due_idx" ON "email_drafts" USING btree ("planned_send_at") WHERE status = 'draft' and planned_send_at is not null;--> statement-breakpoint
CREATE INDEX "email_drafts_sending_idx" ON "email_drafts" USING btree ("sending_lease_until") WHERE status = 'sending';