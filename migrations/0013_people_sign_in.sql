-- People (issue 18): passwords and second factors, sign-in sessions, emailed one-time tokens, sign-in
-- throttling, and an organization's "admins need a second factor" setting. None of these tables is an
-- organization's: they belong to a user (or an address), so they carry no row-level security policy and
-- the tenant role may not touch them at all; the sign-in code reaches them as the service
-- (docs/people.md#storage).
ALTER TABLE "organizations" ADD COLUMN "require_admin_mfa" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
CREATE TABLE "user_credentials" (
  "user_uid" uuid PRIMARY KEY NOT NULL REFERENCES "users"("uid") ON DELETE CASCADE,
  "password_hash" text,
  "password_changed_at" timestamp with time zone,
  -- Sealed with SECRET_KEY (docs/security.md#secrets-at-rest), like every stored secret.
  "totp_secret" text,
  "totp_enabled_at" timestamp with time zone,
  -- The last time step a code was accepted for: a code is good once.
  "totp_last_step" bigint,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "user_sessions" (
  "uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
  "user_uid" uuid NOT NULL REFERENCES "users"("uid") ON DELETE CASCADE,
  "token_hash" text NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
  "expires_at" timestamp with time zone NOT NULL,
  "revoked_at" timestamp with time zone,
  "ip_address" text,
  "user_agent" text,
  "method" text NOT NULL CHECK ("method" IN ('password', 'sign_in_link', 'invitation'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "user_sessions_token_hash_key" ON "user_sessions" ("token_hash");
--> statement-breakpoint
CREATE INDEX "user_sessions_user_idx" ON "user_sessions" ("user_uid", "created_at" DESC);
--> statement-breakpoint
CREATE TABLE "user_tokens" (
  "uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
  "user_uid" uuid NOT NULL REFERENCES "users"("uid") ON DELETE CASCADE,
  "kind" text NOT NULL CHECK ("kind" IN ('password_reset', 'sign_in_link')),
  "token_hash" text NOT NULL,
  "expires_at" timestamp with time zone NOT NULL,
  "used_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "user_tokens_token_hash_key" ON "user_tokens" ("token_hash");
--> statement-breakpoint
CREATE INDEX "user_tokens_user_idx" ON "user_tokens" ("user_uid", "kind");
--> statement-breakpoint
CREATE TABLE "sign_in_throttle" (
  "bucket" text PRIMARY KEY NOT NULL,
  "failures" integer NOT NULL,
  "last_failed_at" timestamp with time zone NOT NULL,
  "blocked_until" timestamp with time zone
);
--> statement-breakpoint
REVOKE ALL ON "user_credentials", "user_sessions", "user_tokens", "sign_in_throttle" FROM remit_tenant;
--> statement-breakpoint
-- As remit_authenticate (0011) for a session cookie: the one read a cookie-authenticated request makes
-- before its organizations are known. Idle and absolute expiry are judged here, against the database's
-- clock, like a key's expiry.
CREATE FUNCTION remit_authenticate_session(p_token_hash text, p_known_version integer, p_idle_seconds integer)
RETURNS TABLE (
  session_uid uuid, token_hash text, is_expired boolean, is_revoked boolean, last_seen_at timestamp with time zone,
  user_uid uuid, user_id integer, email text, full_name text, avatar_url text,
  auth_version integer, memberships json, totp_enabled boolean
) LANGUAGE plpgsql STABLE SECURITY DEFINER AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT s.uid, s.token_hash,
         (s.expires_at <= now() OR s.last_seen_at + make_interval(secs => p_idle_seconds) <= now()),
         (s.revoked_at IS NOT NULL),
         s.last_seen_at,
         u.uid, u.id, u.email, u.full_name, u.avatar_url, u.auth_version,
         CASE WHEN u.auth_version = p_known_version THEN NULL ELSE
           coalesce((SELECT json_agg(json_build_object(
                       'organization_uid', m.organization_uid, 'organization_name', o.name,
                       'role', m.role, 'is_default', m.is_default,
                       'require_admin_mfa', o.require_admin_mfa) ORDER BY m.organization_uid)
                     FROM public.memberships m JOIN public.organizations o ON o.uid = m.organization_uid
                     WHERE m.user_uid = u.uid), '[]'::json) END,
         (c.totp_enabled_at IS NOT NULL)
    FROM public.user_sessions s JOIN public.users u ON u.uid = s.user_uid
    LEFT JOIN public.user_credentials c ON c.user_uid = u.uid
   WHERE s.token_hash = p_token_hash;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION remit_authenticate_session(text, integer, integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION remit_authenticate_session(text, integer, integer) TO remit_tenant;
--> statement-breakpoint
-- Sessions cache memberships by the user's auth_version (as keys do): the setting is part of what they
-- cache, so changing it bumps the version of every member, as renaming the organization does.
CREATE TRIGGER organizations_require_admin_mfa_auth_version AFTER UPDATE OF require_admin_mfa ON organizations
  FOR EACH ROW WHEN (OLD.require_admin_mfa IS DISTINCT FROM NEW.require_admin_mfa)
  EXECUTE FUNCTION organizations_bump_auth_version();
