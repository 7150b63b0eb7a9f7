-- GET /api/email/drafts (docs/email-sending.md#the-list): an organization's emails, newest change first,
-- and the emails about one entity (an invoice's page).
CREATE INDEX "email_drafts_org_updated_idx" ON "email_drafts" USING btree ("organization_uid","updated_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "email_drafts_org_context_idx" ON "email_drafts" USING btree ("organization_uid","context_type","context_id");
