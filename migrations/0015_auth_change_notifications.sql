-- Authentication cache (issue 17; docs/performance.md#authentication-cache). A server keeps the
-- principal of an API key it has just authenticated for a few seconds, and forgets every such entry
-- when anything authentication reads changes: these triggers NOTIFY `remit_auth` on such a change, at
-- commit, to every listening session of every process (the committing session included, before its
-- COMMIT returns). Statement-level and payload-less: a change is rare, and forgetting everything is
-- simpler than knowing which keys a change reaches.
CREATE FUNCTION remit_notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('remit_auth', '');
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- last_used_at and name are not read by authentication: the once-a-minute touch notifies nobody.
CREATE TRIGGER api_keys_auth_change
  AFTER UPDATE OF key_hash, scopes, expires_at, revoked_at, user_uid, organization_uid OR DELETE OR TRUNCATE
  ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_auth_change();
--> statement-breakpoint
-- Membership and organization-name changes reach users.auth_version through the triggers of 0005.
CREATE TRIGGER users_auth_change
  AFTER UPDATE OF email, full_name, avatar_url, auth_version OR DELETE OR TRUNCATE
  ON users FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_auth_change();
--> statement-breakpoint
-- The same read as 0011's, plus the key's expiry, so a cached principal never outlives its key.
DROP FUNCTION remit_authenticate(text, integer);
--> statement-breakpoint
CREATE FUNCTION remit_authenticate(p_key_hash text, p_known_version integer)
RETURNS TABLE (
  key_uid uuid, key_organization_uid uuid, key_hash text, scopes text[], expires_at timestamptz,
  is_expired boolean, is_revoked boolean, user_uid uuid, user_id integer, email text, full_name text,
  avatar_url text, auth_version integer, memberships json
) LANGUAGE plpgsql STABLE SECURITY DEFINER AS $$
#variable_conflict use_column
BEGIN
  -- As in 0011: plpgsql for a plan cached per session; relations schema-qualified, no SET clause.
  RETURN QUERY
  SELECT k.uid, k.organization_uid, k.key_hash, k.scopes, k.expires_at,
         (k.expires_at IS NOT NULL AND k.expires_at <= now()),
         (k.revoked_at IS NOT NULL),
         u.uid, u.id, u.email, u.full_name, u.avatar_url, u.auth_version,
         CASE WHEN u.auth_version = p_known_version THEN NULL ELSE
           coalesce((SELECT json_agg(json_build_object(
                       'organization_uid', m.organization_uid, 'organization_name', o.name,
                       'role', m.role, 'is_default', m.is_default) ORDER BY m.organization_uid)
                     FROM public.memberships m JOIN public.organizations o ON o.uid = m.organization_uid
                     WHERE m.user_uid = u.uid), '[]'::json) END
    FROM public.api_keys k JOIN public.users u ON u.uid = k.user_uid
   WHERE k.key_hash = p_key_hash;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION remit_authenticate(text, integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION remit_authenticate(text, integer) TO remit_tenant;
