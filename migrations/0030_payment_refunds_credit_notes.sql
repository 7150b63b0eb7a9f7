-- Credit notes, refunds and voided payments (issue 22 item 3; docs/invoices.md#payments-refunds-and-credit-notes).
-- A payment is never edited in place: a refund is a row of its own, a mistaken payment is voided (kept,
-- with who and why), and what an invoice counts as paid is Σ (amount − refunded) of its payments not
-- voided. Existing payments are plain successful ones.
ALTER TABLE "invoice_payments" ADD COLUMN "status" text DEFAULT 'succeeded' NOT NULL;
--> statement-breakpoint
ALTER TABLE "invoice_payments" ADD COLUMN "amount_refunded_cents" bigint DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE "invoice_payments" ADD COLUMN "voided_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "invoice_payments" ADD COLUMN "voided_by_user_uid" uuid;
--> statement-breakpoint
ALTER TABLE "invoice_payments" ADD COLUMN "void_reason" text;
--> statement-breakpoint
ALTER TABLE "invoice_payments" ADD CONSTRAINT "invoice_payments_status_check"
  CHECK ("status" IN ('succeeded', 'partially_refunded', 'refunded', 'voided'));
--> statement-breakpoint
ALTER TABLE "invoice_payments" ADD CONSTRAINT "invoice_payments_refunded_check"
  CHECK ("amount_refunded_cents" >= 0 AND "amount_refunded_cents" <= "amount_cents");
--> statement-breakpoint
-- GET /api/payments: an organization's payments, newest first.
CREATE INDEX "invoice_payments_org_paid_idx" ON "invoice_payments" USING btree ("organization_uid", "paid_at" DESC, "uid" DESC);
--> statement-breakpoint
CREATE TABLE "invoice_payment_refunds" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"payment_uid" uuid NOT NULL,
	"amount_cents" bigint NOT NULL,
	"reason" text NOT NULL,
	"created_by_user_uid" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "invoice_payment_refunds_amount_check" CHECK ("amount_cents" > 0)
);
--> statement-breakpoint
ALTER TABLE "invoice_payment_refunds" ADD CONSTRAINT "invoice_payment_refunds_invoice_uid_invoices_uid_fk" FOREIGN KEY ("invoice_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "invoice_payment_refunds" ADD CONSTRAINT "invoice_payment_refunds_payment_uid_invoice_payments_uid_fk" FOREIGN KEY ("payment_uid") REFERENCES "public"."invoice_payments"("uid") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "invoice_payment_refunds_payment_idx" ON "invoice_payment_refunds" USING btree ("organization_uid", "payment_uid", "created_at");
--> statement-breakpoint
ALTER TABLE "invoice_payment_refunds" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "invoice_payment_refunds"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
CREATE TABLE "invoice_credit_notes" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL,
	"amount_cents" bigint NOT NULL,
	"reason" text NOT NULL,
	"memo" text DEFAULT '' NOT NULL,
	"status" text DEFAULT 'issued' NOT NULL,
	"created_by_user_uid" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"voided_at" timestamp with time zone,
	"voided_by_user_uid" uuid,
	"void_reason" text,
	CONSTRAINT "invoice_credit_notes_amount_check" CHECK ("amount_cents" > 0),
	CONSTRAINT "invoice_credit_notes_status_check" CHECK ("status" IN ('issued', 'void'))
);
--> statement-breakpoint
ALTER TABLE "invoice_credit_notes" ADD CONSTRAINT "invoice_credit_notes_invoice_uid_invoices_uid_fk" FOREIGN KEY ("invoice_uid") REFERENCES "public"."invoices"("uid") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "invoice_credit_notes_invoice_idx" ON "invoice_credit_notes" USING btree ("organization_uid", "invoice_uid", "created_at");
--> statement-breakpoint
ALTER TABLE "invoice_credit_notes" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "invoice_credit_notes"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
