-- Billing sync without a transaction across the partner call (issue 15): an intent is `in_progress`
-- while its partner call runs, and records the invoice revision its update was prepared from, so the
-- short transaction that applies it can tell whether the invoice changed meanwhile.
ALTER TABLE "billing_sync_intents" ADD COLUMN "base_revision" integer;
--> statement-breakpoint
CREATE INDEX "billing_sync_intents_in_progress_idx" ON "billing_sync_intents" USING btree ("organization_uid","invoice_uid") WHERE "billing_sync_intents"."state" = 'in_progress';
