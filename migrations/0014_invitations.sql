-- Members and invitations (issue 18; docs/people.md#members-and-invitations). An invitation belongs to
-- an organization, so it carries the row-level security policy of every tenant table (0011). The link's
-- token is stored only as its SHA-256; the plaintext exists in the email alone.
CREATE TABLE "invitations" (
  "uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
  "organization_uid" uuid NOT NULL REFERENCES "organizations"("uid"),
  -- Normalized (trimmed, lower case), as users.email is.
  "email" text NOT NULL,
  "role" text NOT NULL CHECK ("role" IN ('admin', 'member')),
  "token_hash" text NOT NULL,
  "invited_by_user_uid" uuid REFERENCES "users"("uid"),
  "expires_at" timestamp with time zone NOT NULL,
  "accepted_at" timestamp with time zone,
  "accepted_by_user_uid" uuid REFERENCES "users"("uid"),
  "revoked_at" timestamp with time zone,
  "last_sent_at" timestamp with time zone DEFAULT now() NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
-- A presented token is found by its hash alone (the public routes know no organization yet).
CREATE UNIQUE INDEX "invitations_token_hash_key" ON "invitations" ("token_hash");
--> statement-breakpoint
-- At most one open (neither accepted nor revoked) invitation per address in an organization: a second
-- invite of the same address is a 409, also when two arrive at once. An expired open one is revoked by
-- the next invite in the same transaction.
CREATE UNIQUE INDEX "invitations_open_email_key" ON "invitations" ("organization_uid", "email")
  WHERE "accepted_at" IS NULL AND "revoked_at" IS NULL;
--> statement-breakpoint
CREATE INDEX "invitations_org_created_idx" ON "invitations" ("organization_uid", "created_at" DESC, "uid" DESC);
--> statement-breakpoint
ALTER TABLE "invitations" ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON "invitations"
  USING (organization_uid = ANY (remit_tenant_organizations()))
  WITH CHECK (organization_uid = ANY (remit_tenant_organizations()));
--> statement-breakpoint
-- A member's keys in one organization: revoked together when the member is removed, and their latest
-- use is the member list's last activity.
CREATE INDEX "api_keys_org_user_idx" ON "api_keys" ("organization_uid", "user_uid");
