-- Segregation of duties (issue 14): an organization setting, off by default, and who entered each
-- invoice (null for invoices entered before this migration: nobody is barred from approving those).
ALTER TABLE "organizations" ADD COLUMN "segregation_of_duties" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
ALTER TABLE "invoices" ADD COLUMN "entered_by_user_uid" uuid;
