-- How a session was established: the time its person proved a second factor (a TOTP code at sign-in,
-- or turning TOTP on from it), else NULL. Required admin MFA reads this, never whether the person has
-- TOTP now: a password-only session opened before TOTP was turned on elsewhere stays password-only.
ALTER TABLE user_sessions ADD COLUMN second_factor_at timestamp with time zone;
--> statement-breakpoint
-- Sessions opened while their person already had TOTP on were opened with a code.
UPDATE user_sessions s SET second_factor_at = s.created_at
  FROM user_credentials c
 WHERE c.user_uid = s.user_uid AND c.totp_enabled_at IS NOT NULL AND c.totp_enabled_at <= s.created_at;
--> statement-breakpoint
DROP FUNCTION remit_authenticate_session(text, integer, integer);
--> statement-breakpoint
CREATE FUNCTION remit_authenticate_session(p_token_hash text, p_known_version integer, p_idle_seconds integer)
RETURNS TABLE (
  session_uid uuid, token_hash text, is_expired boolean, is_revoked boolean, last_seen_at timestamp with time zone,
  user_uid uuid, user_id integer, email text, full_name text, avatar_url text,
  auth_version integer, memberships json, totp_enabled boolean, second_factor boolean
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
         (c.totp_enabled_at IS NOT NULL),
         (s.second_factor_at IS NOT NULL)
    FROM public.user_sessions s JOIN public.users u ON u.uid = s.user_uid
    LEFT JOIN public.user_credentials c ON c.user_uid = u.uid
   WHERE s.token_hash = p_token_hash;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION remit_authenticate_session(text, integer, integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION remit_authenticate_session(text, integer, integer) TO remit_tenant;
