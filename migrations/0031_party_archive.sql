-- Archived parties (issue 22, item 4; docs/invoices.md#archiving-a-party). A party is archived, never
-- deleted: invoices point at it (client_party_uid, service_provider_party_uid) and keep doing so. An
-- archived party leaves the default party list and cannot be named on a new invoice; NULL = active.
ALTER TABLE "parties" ADD COLUMN "archived_at" timestamp with time zone;
--> statement-breakpoint
-- The party list's default (active parties only), newest change first, as parties_org_updated_idx.
CREATE INDEX "parties_org_active_updated_idx" ON "parties" USING btree ("organization_uid", "updated_at" DESC, "uid" DESC)
  WHERE "archived_at" IS NULL;
