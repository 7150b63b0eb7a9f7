CREATE TABLE "parties" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"name" text NOT NULL,
	"role" text NOT NULL,
	"address" text DEFAULT '' NOT NULL,
	"tax_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "party_contacts" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"party_uid" uuid NOT NULL,
	"name" text DEFAULT '' NOT NULL,
	"title" text DEFAULT '' NOT NULL,
	"email" text DEFAULT '' NOT NULL,
	"phone" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "products" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"sku" text NOT NULL,
	"name" text NOT NULL,
	"context_type" text NOT NULL,
	"unit_price" bigint NOT NULL,
	"currency" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_integrations" (
	"organization_uid" uuid PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"url" text NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_sync_intents" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"revision" integer NOT NULL,
	"idempotency_key" text NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invoice_assignees" (
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"user_uid" uuid NOT NULL,
	CONSTRAINT "invoice_assignees_organization_uid_invoice_uid_user_uid_pk" PRIMARY KEY("organization_uid","invoice_uid","user_uid")
);
--> statement-breakpoint
CREATE TABLE "invoice_attachments" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"filename" text NOT NULL,
	"content_type" text NOT NULL,
	"file_size" bigint NOT NULL,
	"storage_key" text NOT NULL,
	"uploaded_by" integer NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"is_public" boolean DEFAULT false NOT NULL,
	"created_on" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invoice_comments" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"author_user_uid" uuid NOT NULL,
	"text" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_modified_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_by" integer,
	"resolved_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "invoice_integrations" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"entity_uid" uuid NOT NULL,
	"integration_name" text NOT NULL,
	"integration_uid" text,
	"integration_metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invoice_line_items" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"context_type_uid" uuid NOT NULL,
	"context_type" text NOT NULL,
	"context_name" text NOT NULL,
	"sku" text NOT NULL,
	"currency" text NOT NULL,
	"quantity" integer NOT NULL,
	"unit_price" bigint NOT NULL,
	"line_total" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invoice_payments" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"amount_cents" bigint NOT NULL,
	"paid_at" timestamp with time zone NOT NULL,
	"created_by_user_uid" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invoices" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_type" text NOT NULL,
	"invoice_number" text NOT NULL,
	"status" text NOT NULL,
	"collection_method" text DEFAULT 'send_invoice' NOT NULL,
	"currency" text NOT NULL,
	"issue_date" timestamp with time zone,
	"due_date" timestamp with time zone,
	"paid_date" timestamp with time zone,
	"subtotal_cents" bigint DEFAULT 0 NOT NULL,
	"discount_cents" bigint DEFAULT 0 NOT NULL,
	"tax_cents" bigint DEFAULT 0 NOT NULL,
	"total_cents" bigint DEFAULT 0 NOT NULL,
	"pre_payment_credit_notes_cents" bigint DEFAULT 0 NOT NULL,
	"amount_due_cents" bigint DEFAULT 0 NOT NULL,
	"amount_paid_cents" bigint DEFAULT 0 NOT NULL,
	"amount_remaining_cents" bigint DEFAULT 0 NOT NULL,
	"invoice_link" text,
	"document_uid" uuid,
	"invoice_blueprint_uid" uuid,
	"target_party_uid" uuid,
	"client_party_uid" uuid,
	"service_provider_party_uid" uuid,
	"client_name" text DEFAULT '' NOT NULL,
	"vendor_name" text DEFAULT '' NOT NULL,
	"vendor_nit" text DEFAULT '' NOT NULL,
	"has_comments" boolean DEFAULT false NOT NULL,
	"invoice_memo" text DEFAULT '' NOT NULL,
	"invoice_footer" text DEFAULT '' NOT NULL,
	"invoice_fields" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"stamp_number" text,
	"received_date" timestamp with time zone,
	"document_type" text,
	"registration_number" text,
	"approved_by" integer,
	"approval_date" timestamp with time zone,
	"registered_by" integer,
	"registration_date" timestamp with time zone,
	"responsible" integer,
	"revision" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "parties" ADD CONSTRAINT "parties_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "party_contacts" ADD CONSTRAINT "party_contacts_party_uid_parties_uid_fk" FOREIGN KEY ("party_uid") REFERENCES "public"."parties"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "products" ADD CONSTRAINT "products_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_integrations" ADD CONSTRAINT "billing_integrations_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoice_assignees" ADD CONSTRAINT "invoice_assignees_invoice_uid_invoices_uid_fk" FOREIGN KEY ("invoice_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoice_attachments" ADD CONSTRAINT "invoice_attachments_invoice_uid_invoices_uid_fk" FOREIGN KEY ("invoice_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoice_comments" ADD CONSTRAINT "invoice_comments_invoice_uid_invoices_uid_fk" FOREIGN KEY ("invoice_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoice_integrations" ADD CONSTRAINT "invoice_integrations_entity_uid_invoices_uid_fk" FOREIGN KEY ("entity_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoice_line_items" ADD CONSTRAINT "invoice_line_items_invoice_uid_invoices_uid_fk" FOREIGN KEY ("invoice_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoice_payments" ADD CONSTRAINT "invoice_payments_invoice_uid_invoices_uid_fk" FOREIGN KEY ("invoice_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_client_party_uid_parties_uid_fk" FOREIGN KEY ("client_party_uid") REFERENCES "public"."parties"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_service_provider_party_uid_parties_uid_fk" FOREIGN KEY ("service_provider_party_uid") REFERENCES "public"."parties"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "parties_org_role_updated_idx" ON "parties" USING btree ("organization_uid","role","updated_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "parties_org_updated_idx" ON "parties" USING btree ("organization_uid","updated_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "parties_name_trgm_idx" ON "parties" USING gin ("name" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "parties_address_trgm_idx" ON "parties" USING gin ("address" gin_trgm_ops);--> statement-breakpoint
CREATE UNIQUE INDEX "party_contacts_party_key" ON "party_contacts" USING btree ("organization_uid","party_uid");--> statement-breakpoint
CREATE INDEX "party_contacts_email_idx" ON "party_contacts" USING btree ("organization_uid",lower("email"));--> statement-breakpoint
CREATE UNIQUE INDEX "products_org_sku_key" ON "products" USING btree ("organization_uid","sku");--> statement-breakpoint
CREATE INDEX "products_org_created_idx" ON "products" USING btree ("organization_uid","created_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "billing_sync_intents_pending_idx" ON "billing_sync_intents" USING btree ("state","created_at");--> statement-breakpoint
CREATE INDEX "billing_sync_intents_invoice_idx" ON "billing_sync_intents" USING btree ("organization_uid","invoice_uid","revision");--> statement-breakpoint
CREATE INDEX "invoice_assignees_user_idx" ON "invoice_assignees" USING btree ("organization_uid","user_uid","invoice_uid");--> statement-breakpoint
CREATE INDEX "invoice_attachments_invoice_idx" ON "invoice_attachments" USING btree ("organization_uid","invoice_uid","created_on" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "invoice_comments_invoice_idx" ON "invoice_comments" USING btree ("organization_uid","invoice_uid","created_at","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "invoice_integrations_entity_name_key" ON "invoice_integrations" USING btree ("organization_uid","entity_uid","integration_name");--> statement-breakpoint
CREATE INDEX "invoice_line_items_invoice_idx" ON "invoice_line_items" USING btree ("organization_uid","invoice_uid","created_at","uid");--> statement-breakpoint
CREATE INDEX "invoice_payments_invoice_idx" ON "invoice_payments" USING btree ("organization_uid","invoice_uid","paid_at");--> statement-breakpoint
CREATE UNIQUE INDEX "invoices_org_ar_number_key" ON "invoices" USING btree ("organization_uid","invoice_number") WHERE "invoices"."invoice_type" = 'ACCOUNTS_RECEIVABLE';--> statement-breakpoint
CREATE INDEX "invoices_org_type_number_idx" ON "invoices" USING btree ("organization_uid","invoice_type","invoice_number","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_issue_idx" ON "invoices" USING btree ("organization_uid","invoice_type","issue_date","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_due_idx" ON "invoices" USING btree ("organization_uid","invoice_type","due_date","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_status_due_idx" ON "invoices" USING btree ("organization_uid","invoice_type","status","due_date","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_status_issue_idx" ON "invoices" USING btree ("organization_uid","invoice_type","status","issue_date","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_status_idx" ON "invoices" USING btree ("organization_uid","invoice_type","status","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_vendor_name_idx" ON "invoices" USING btree ("organization_uid","invoice_type","vendor_name","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_vendor_nit_idx" ON "invoices" USING btree ("organization_uid","invoice_type","vendor_nit","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_amount_due_idx" ON "invoices" USING btree ("organization_uid","invoice_type","amount_due_cents","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_received_idx" ON "invoices" USING btree ("organization_uid","invoice_type","received_date","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_document_type_idx" ON "invoices" USING btree ("organization_uid","invoice_type","document_type","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_stamp_idx" ON "invoices" USING btree ("organization_uid","invoice_type","stamp_number","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_approved_by_idx" ON "invoices" USING btree ("organization_uid","invoice_type","approved_by","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_approval_date_idx" ON "invoices" USING btree ("organization_uid","invoice_type","approval_date","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_registered_by_idx" ON "invoices" USING btree ("organization_uid","invoice_type","registered_by","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_registration_date_idx" ON "invoices" USING btree ("organization_uid","invoice_type","registration_date","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_registration_number_idx" ON "invoices" USING btree ("organization_uid","invoice_type","registration_number","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_has_comments_idx" ON "invoices" USING btree ("organization_uid","invoice_type","has_comments","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_type_responsible_idx" ON "invoices" USING btree ("organization_uid","invoice_type","responsible","uid");--> statement-breakpoint
CREATE INDEX "invoices_org_issue_idx" ON "invoices" USING btree ("organization_uid","issue_date" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "invoices_number_trgm_idx" ON "invoices" USING gin ("invoice_number" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "invoices_client_name_trgm_idx" ON "invoices" USING gin ("client_name" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "invoices_vendor_name_trgm_idx" ON "invoices" USING gin ("vendor_name" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "invoices_client_party_idx" ON "invoices" USING btree ("organization_uid","client_party_uid");--> statement-breakpoint
CREATE INDEX "invoices_provider_party_idx" ON "invoices" USING btree ("organization_uid","service_provider_party_uid");