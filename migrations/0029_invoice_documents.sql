-- Invoice documents (issue 22, item 2; docs/invoices.md#invoice-documents): what the PDF of a receivable
-- shows of its organization, the rendered PDF's place in object storage, and the hosted invoice links.
ALTER TABLE "organizations" ADD COLUMN "address" text DEFAULT '' NOT NULL;
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "tax_id" text;
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "payment_instructions" text DEFAULT '' NOT NULL;
--> statement-breakpoint
-- The latest PDF of each invoice: `content_hash` is the SHA-256 of everything the PDF shows (and the
-- layout's version), so any change to the invoice, its lines, payments, client or the organization's
-- details makes another hash and the next request renders again. The bytes live in object storage.
CREATE TABLE "invoice_documents" (
	"organization_uid" uuid NOT NULL,
	"invoice_uid" uuid NOT NULL REFERENCES "invoices"("uid") ON DELETE CASCADE,
	"content_hash" text NOT NULL,
	"storage_key" text NOT NULL,
	"byte_size" integer NOT NULL,
	"rendered_at" timestamp with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("organization_uid", "invoice_uid")
);
--> statement-breakpoint
ALTER TABLE "invoice_documents" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "invoice_documents"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
-- A hosted invoice page's link: the token is stored as its SHA-256 (found by it alone: the public page
-- knows no organization before the token) and sealed with the secret key (so the live link can be shown
-- again to whoever may send it; a copy of the database alone opens neither).
CREATE TABLE "hosted_invoice_links" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL REFERENCES "organizations"("uid"),
	"invoice_uid" uuid NOT NULL REFERENCES "invoices"("uid") ON DELETE CASCADE,
	"token_hash" text NOT NULL,
	"token_sealed" text NOT NULL,
	"created_by_user_uid" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone,
	"revoked_by_user_uid" uuid,
	"last_viewed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "hosted_invoice_links_token_hash_key" ON "hosted_invoice_links" ("token_hash");
--> statement-breakpoint
-- At most one live link per invoice: two concurrent creations meet here, and the loser reads the winner's.
CREATE UNIQUE INDEX "hosted_invoice_links_live_key" ON "hosted_invoice_links" ("organization_uid", "invoice_uid")
  WHERE "revoked_at" IS NULL;
--> statement-breakpoint
ALTER TABLE "hosted_invoice_links" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "hosted_invoice_links"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
