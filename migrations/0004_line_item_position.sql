DROP INDEX "invoice_line_items_invoice_idx";--> statement-breakpoint
ALTER TABLE "invoice_line_items" ADD COLUMN "position" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "invoice_line_items_invoice_idx" ON "invoice_line_items" USING btree ("organization_uid","invoice_uid","position","uid");